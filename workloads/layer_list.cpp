// Layer-list workloads (layer_list.hpp): ResNet-50 as layers, a layer's kernels, and the data-parallel step.
#include "workloads/layer_list.hpp"

#include <array>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "topology/error.hpp"
#include "topology/name_table.hpp"
#include "workloads/compute_model.hpp"

namespace dtsim::workloads {
namespace {

using topology::NameTable;

constexpr NameTable<LayerKind, 5> kLayerKinds{{{LayerKind::Conv, "conv"},
                                               {LayerKind::BatchNorm, "batchnorm"},
                                               {LayerKind::Pool, "pool"},
                                               {LayerKind::Matmul, "matmul"},
                                               {LayerKind::Elementwise, "elementwise"}}};

// ResNet-50's layers, built as the network runs: each helper appends its layer and returns the output's size.
class Net {
 public:
  explicit Net(double element) : e_(element) {}

  // A k x k convolution with padding k / 2, no bias (a batch norm follows).
  int conv(const std::string& name, int cin, int cout, int k, int stride, int in) {
    const int out = (in + 2 * (k / 2) - k) / stride + 1;
    const double positions = static_cast<double>(out) * out;
    const double weights = static_cast<double>(cout) * cin * k * k;
    const double input = static_cast<double>(cin) * in * in;
    layers_.push_back({name, LayerKind::Conv, 2.0 * positions * weights, (input + positions * cout + weights) * e_,
                       weights, input * e_, positions, static_cast<double>(cout), static_cast<double>(cin) * k * k});
    return out;
  }
  // Batch norm over c channels of size x size: its scale and shift; reads its input, writes its output (the
  // statistics' pass is not counted); keeps its input.
  void batchnorm(const std::string& name, int c, int size) {
    const double n = static_cast<double>(c) * size * size;
    layers_.push_back({name, LayerKind::BatchNorm, 0, 2 * n * e_, 2.0 * c, n * e_, 0, 0, 0});
  }
  // ReLU: reads and writes; keeps its output.
  void relu(const std::string& name, int c, int size) {
    const double n = static_cast<double>(c) * size * size;
    layers_.push_back({name, LayerKind::Elementwise, 0, 2 * n * e_, 0, n * e_, 0, 0, 0});
  }
  // The residual add: reads two, writes one; keeps nothing.
  void add(const std::string& name, int c, int size) {
    const double n = static_cast<double>(c) * size * size;
    layers_.push_back({name, LayerKind::Elementwise, 0, 3 * n * e_, 0, 0, 0, 0, 0});
  }
  // Pooling from `in` to `out` pixels a side over c channels; max pooling keeps its input for the backward.
  void pool(const std::string& name, int c, int in, int out, bool keeps) {
    const double read = static_cast<double>(c) * in * in, written = static_cast<double>(c) * out * out;
    layers_.push_back({name, LayerKind::Pool, 0, (read + written) * e_, 0, keeps ? read * e_ : 0, 0, 0, 0});
  }
  void fc(const std::string& name, int in, int out) {
    const double weights = static_cast<double>(in) * out;
    layers_.push_back({name, LayerKind::Matmul, 2 * weights, (in + out + weights) * e_, weights + out, in * e_, 1,
                       static_cast<double>(out), static_cast<double>(in)});
  }

  // A bottleneck block: 1x1 down to `width`, 3x3 (striding), 1x1 up to `out`, each with its batch norm; the
  // shortcut projected (1x1, striding) when the shape changes; the add and the last ReLU.
  int bottleneck(const std::string& name, int cin, int width, int out, int stride, int size) {
    conv(name + ".conv1", cin, width, 1, 1, size);
    batchnorm(name + ".bn1", width, size);
    relu(name + ".relu1", width, size);
    const int half = conv(name + ".conv2", width, width, 3, stride, size);
    batchnorm(name + ".bn2", width, half);
    relu(name + ".relu2", width, half);
    conv(name + ".conv3", width, out, 1, 1, half);
    batchnorm(name + ".bn3", out, half);
    if (stride != 1 || cin != out) {
      conv(name + ".downsample", cin, out, 1, stride, size);
      batchnorm(name + ".downsample.bn", out, half);
    }
    add(name + ".add", out, half);
    relu(name + ".relu3", out, half);
    return half;
  }

  std::vector<LayerSpec> take() { return std::move(layers_); }

 private:
  double e_;
  std::vector<LayerSpec> layers_;
};

}  // namespace

std::string_view to_string(LayerKind k) { return topology::name_of(kLayerKinds, k); }
std::optional<LayerKind> parse_layer_kind(std::string_view name) { return topology::value_of(kLayerKinds, name); }

std::vector<LayerSpec> resnet50(double element) {
  Net net(element);
  int size = net.conv("conv1", 3, 64, 7, 2, 224);
  net.batchnorm("bn1", 64, size);
  net.relu("relu", 64, size);
  net.pool("maxpool", 64, size, size / 2, true);
  size /= 2;
  // (blocks, width) of each stage; the first block of stages 2-4 strides.
  constexpr std::array<std::pair<int, int>, 4> kStages{{{3, 64}, {4, 128}, {6, 256}, {3, 512}}};
  int channels = 64;
  for (std::size_t s = 0; s < kStages.size(); ++s) {
    const auto [blocks, width] = kStages[s];
    for (int b = 0; b < blocks; ++b) {
      const int stride = (s > 0 && b == 0) ? 2 : 1;
      size = net.bottleneck(fmt::format("layer{}.{}", s + 1, b), channels, width, 4 * width, stride, size);
      channels = 4 * width;
    }
  }
  net.pool("avgpool", channels, size, 1, false);
  net.fc("fc", channels, 1000);
  return net.take();
}

bool is_layer_list_preset(std::string_view name) { return name == "resnet50"; }

ModelSpec layer_list_preset(std::string_view name, double element) {
  DTSIM_ASSERT(is_layer_list_preset(name), "a layer-list preset");
  ModelSpec m;
  m.name = std::string(name);
  m.kind = ModelKind::Layers;
  m.layer_list = resnet50(element);
  m.layers = static_cast<int>(m.layer_list.size());
  m.seq_length = 1;
  m.source = "He et al. 2016 (Deep Residual Learning), ResNet-50 as torchvision builds it (v1.5: the bottleneck's 3x3 "
             "convolution strides), 224 x 224 images: 25,557,032 parameters, 4.09 G multiply-adds forward";
  return m;
}

double layer_list_flops(std::span<const LayerSpec> layers) {
  return std::accumulate(layers.begin(), layers.end(), 0.0, [](double s, const LayerSpec& l) { return s + l.flops; });
}

double layer_list_activations(std::span<const LayerSpec> layers) {
  return std::accumulate(layers.begin(), layers.end(), 0.0,
                         [](double s, const LayerSpec& l) { return s + l.activation; });
}

Kernel layer_list_kernel(const LayerSpec& l, Pass pass, double samples) {
  DTSIM_ASSERT(pass != Pass::Recompute, "layer lists recompute nothing");
  static constexpr std::array<KernelClass, 5> kClasses{KernelClass::Conv, KernelClass::BatchNorm, KernelClass::Pool,
                                                       KernelClass::Matmul, KernelClass::Elementwise};
  const bool backward = pass == Pass::Backward;
  Kernel k;
  k.kind = kClasses.at(static_cast<std::size_t>(l.kind));
  k.pass = pass;
  k.flops = FlopCount(l.flops * samples * (backward ? 2.0 : 1.0));
  k.bytes = Bytes(l.bytes * samples * (backward ? 2.0 : 1.0));
  if (l.gemm_m > 0 && l.gemm_n > 0 && l.gemm_k > 0) {
    const GemmShape g{l.gemm_m * samples, l.gemm_n, l.gemm_k, 1};
    k.gemm = backward ? GemmShape{g.m, g.k, g.n, 1} : g;              // the data gradient: m x k, inner n
    if (backward) k.weight_gemm = GemmShape{g.k, g.n, g.m, 1};        // the weight gradient: k x n, inner m
  } else if (l.flops > 0) {
    k.gemm = GemmShape{1e6, 1e6, 1e6, 1};   // no shape given: a large GEMM's efficiency
  }
  return k;
}

StepGraph generate_layer_list_step(const Workload& w, const topology::GpuSpec& gpu, Granularity granularity) {
  const TrainingSpec& t = *w.training;
  const auto& layers = w.model.layer_list;
  const int mbs = micro_batches(w.plan, t);
  const double samples = t.micro_batch;
  std::vector<Op> ops;
  const auto add = [&ops](OpBody body, Deps deps) {
    ops.push_back(Op{std::move(body), std::move(deps)});
    return static_cast<std::uint32_t>(ops.size() - 1);
  };
  const auto compute = [&](const LayerSpec& l, Pass pass, int layer, int mb, Deps deps) {
    const Kernel k = layer_list_kernel(l, pass, samples);
    const Seconds time = kernel_time(k, gpu, t.precision);
    return add(ComputeOp{Scope::Layer, k.kind, pass, layer, mb, k.flops, k.bytes, time, streaming_time(k, time)},
               std::move(deps));
  };
  const double grad = bytes_per_element(t.grad_dtype);
  Deps reductions;
  Deps last{};
  Bytes bucket(0);
  const auto flush = [&](std::uint32_t after, int layer) {
    if (bucket.value() > 0 && w.plan.dp > 1)
      reductions.push_back(add(CollectiveOp{CollectiveKind::AllReduce, Group::Dp, bucket, CommPurpose::DataParallelGrads,
                                            layer, mbs - 1},
                               {after}));
    bucket = Bytes(0);
  };
  for (int mb = 0; mb < mbs; ++mb) {
    for (std::size_t i = 0; i < layers.size(); ++i) last = {compute(layers[i], Pass::Forward, static_cast<int>(i), mb, last)};
    const bool reduce = mb == mbs - 1;   // DDP reduces with the last micro-batch (no_sync before it)
    for (std::size_t i = layers.size(); i-- > 0;) {
      last = {compute(layers[i], Pass::Backward, static_cast<int>(i), mb, last)};
      if (!reduce || layers[i].params <= 0) continue;
      bucket += Bytes(layers[i].params * grad);
      if (bucket >= t.dp_bucket) flush(last.front(), static_cast<int>(i));
    }
  }
  flush(last.front(), -1);
  // The optimizer step: every gradient reduced, the norm, the update, the zeroing (kernels.hpp).
  Deps before = reductions;
  before.push_back(last.front());
  const double params = parameter_count(w.model);
  std::vector<Kernel> step = step_overhead_kernels(t, params);
  step.insert(step.begin() + 1, optimizer_kernel(t, params));
  for (const Kernel& k : step) {
    const Seconds time = kernel_time(k, gpu, t.precision);
    before = {add(ComputeOp{Scope::Optimizer, k.kind, Pass::Forward, -1, -1, k.flops, k.bytes, time, streaming_time(k, time)},
                  std::move(before))};
  }
  StepGraph g{w, Placement(w.plan), granularity, mbs, {}};
  g.classes.push_back(stage_class(g.placement, 0, std::move(ops)));
  return g;
}

}  // namespace dtsim::workloads
