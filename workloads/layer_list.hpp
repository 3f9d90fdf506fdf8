// Layer-list workloads (`model.kind: layers`): a network given as its layers in forward order (LayerSpec,
// model.hpp), each with its work per sample, trained with data parallelism as PyTorch DDP runs it. For networks
// that are not transformers: the CNNs every MLPerf box reports (ResNet-50), and whatever a user lists layer by
// layer.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "topology/catalog.hpp"
#include "workloads/kernels.hpp"
#include "workloads/model.hpp"
#include "workloads/step_graph.hpp"

namespace dtsim::workloads {

std::string_view to_string(LayerKind k);
std::optional<LayerKind> parse_layer_kind(std::string_view name);
inline constexpr std::string_view kLayerKindNames = "conv, batchnorm, pool, matmul, elementwise";

// The layer-list presets (`model.preset`): resnet50. `element` is the activations' bytes per element.
inline constexpr std::string_view kLayerListPresetNames = "resnet50";
bool is_layer_list_preset(std::string_view name);
ModelSpec layer_list_preset(std::string_view name, double element);

// ResNet-50 v1.5 (He et al. 2016; torchvision's resnet50, the 3x3 convolution of each bottleneck striding) on a
// 224 x 224 image: 53 convolutions, 53 batch norms, the ReLUs and residual adds, max and average pooling, the
// 1000-way classifier. 25,557,032 parameters; 4.09 G multiply-adds forward (torchvision's "4.09 GFLOPS").
std::vector<LayerSpec> resnet50(double element);

double layer_list_flops(std::span<const LayerSpec> layers);        // forward, per sample
double layer_list_activations(std::span<const LayerSpec> layers);  // bytes kept per sample

// A layer's kernel for `pass` (Forward or Backward) over `samples` samples: forward as given; backward twice the
// forward's bytes (read what the forward read and the incoming gradient, write the gradients), and for a conv or
// matmul twice its FLOPs (the data and the weight gradients) with both GEMMs' shapes.
Kernel layer_list_kernel(const LayerSpec& l, Pass pass, double samples);

// One training step of a layer-list model (check_plan passed: data parallelism only): per micro-batch each
// layer's forward, then its backward in reverse; with the last micro-batch the gradients fill DDP's buckets
// (training.dp_bucket), each all-reduced as it fills, beside the rest of the backward; then the optimizer step.
StepGraph generate_layer_list_step(const Workload& w, const topology::GpuSpec& gpu, Granularity granularity);

}  // namespace dtsim::workloads
