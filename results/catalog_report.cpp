// `dtsim catalog`: the hardware catalog and the model presets as a plain-text table or as JSON. Units are in the
// column and key names.
#include "results/catalog_report.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <string>

#include "topology/catalog.hpp"
#include "topology/units.hpp"
#include "workloads/compute_model.hpp"
#include "workloads/model.hpp"

namespace dtsim::results {
namespace {

using nlohmann::json;
using topology::GpuSpec;
using topology::LinkSpec;
using topology::Precision;
using workloads::ModelSpec;

// The precisions the table shows; JSON lists all the GPU has.
constexpr std::array kTablePrecisions = {Precision::Fp32, Precision::Tf32, Precision::Bf16, Precision::Fp8, Precision::Fp4,
                                         Precision::Mxfp4, Precision::Int8};

// Unit conversions leave binary noise (0.6 us -> 0.6000000000000001); 12 significant digits is far below any
// figure's accuracy and prints clean numbers.
double tidy(double value) {
  const auto text = fmt::format("{:.12g}", value);
  double out = value;
  std::from_chars(text.data(), text.data() + text.size(), out);
  return out;
}

std::int64_t whole_bytes(Bytes b) { return static_cast<std::int64_t>(std::llround(b.value())); }

std::string peak_cell(const GpuSpec& gpu, Precision p) {
  const auto peak = gpu.peak_for(p);
  return peak ? fmt::format("{:g}", tidy(to_teraflops(*peak))) : std::string("-");
}

std::string gpu_header() {
  std::string row = fmt::format("{:<16} {:>8} {:>9}", "gpu", "mem_GiB", "HBM_GBps");
  for (const auto p : kTablePrecisions) row += fmt::format(" {:>7}", to_string(p));
  return row + fmt::format(" {:>6} {:>5} {:<19} {:>9} {:>7}\n", "tdp_W", "clock", "gpu_link", "price_usd", "usd_h");
}

std::string gpu_row(const GpuSpec& gpu) {
  std::string row = fmt::format("{:<16} {:>8.1f} {:>9.0f}", gpu.name, to_gibibytes(gpu.memory),
                                to_gigabytes_per_second(gpu.memory_bandwidth));
  for (const auto p : kTablePrecisions) row += fmt::format(" {:>7}", peak_cell(gpu, p));
  const auto link = fmt::format("{} x{}", gpu.gpu_link, gpu.gpu_link_count);
  return row + fmt::format(" {:>6.0f} {:>5.3f} {:<19} {:>9.0f} {:>7.2f}\n", gpu.tdp.value(),
                           workloads::sustained_clock(gpu), link, gpu.price.value(), gpu.price_per_hour.value());
}

std::string link_header() {
  return fmt::format("{:<16} {:<17} {:>8} {:>8} {:>10} {:>10}\n", "link", "family", "GBps_dir", "Gbps",
                     "latency_us", "efficiency");
}

std::string link_row(const LinkSpec& link) {
  return fmt::format("{:<16} {:<17} {:>8g} {:>8g} {:>10g} {:>10g}\n", link.name, to_string(link.family),
                     tidy(to_gigabytes_per_second(link.bandwidth)), tidy(to_gigabits_per_second(link.bandwidth)),
                     tidy(to_microseconds(link.latency)), link.efficiency);
}

json peaks_json(const GpuSpec& gpu) {
  json peaks = json::object();
  for (const auto p : topology::kAllPrecisions) {
    if (const auto peak = gpu.peak_for(p)) peaks[std::string(to_string(p))] = tidy(to_teraflops(*peak));
  }
  return peaks;
}

json gpu_json(const GpuSpec& gpu) {
  return {{"name", gpu.name},
          {"vendor_name", gpu.vendor_name},
          {"architecture", gpu.architecture},
          {"memory_bytes", whole_bytes(gpu.memory)},
          {"memory_reserve_bytes", whole_bytes(gpu.memory_reserve)},
          {"memory_bandwidth_GBps", tidy(to_gigabytes_per_second(gpu.memory_bandwidth))},
          {"peak_TFLOPS", peaks_json(gpu)},
          {"tdp_W", gpu.tdp.value()},
          {"sustained_clock", workloads::sustained_clock(gpu)},
          {"sms", gpu.sms},
          {"price_usd", gpu.price.value()},
          {"price_per_hour_usd", gpu.price_per_hour.value()},
          {"gpu_link", gpu.gpu_link},
          {"gpu_link_count", gpu.gpu_link_count},
          {"host_link", gpu.host_link},
          {"cpu_link", gpu.cpu_link.empty() ? gpu.host_link : gpu.cpu_link},
          {"scale_out_link", topology::default_inter_link(gpu).name},
          {"source", gpu.source}};
}

json link_json(const LinkSpec& link) {
  return {{"name", link.name},
          {"family", std::string(to_string(link.family))},
          {"bandwidth_GBps", tidy(to_gigabytes_per_second(link.bandwidth))},
          {"bandwidth_Gbps", tidy(to_gigabits_per_second(link.bandwidth))},
          {"latency_us", tidy(to_microseconds(link.latency))},
          {"efficiency", link.efficiency},
          {"source", link.source}};
}

std::string model_header() {
  return fmt::format("{:<22} {:>9} {:>9} {:>6} {:>6} {:>5} {:>8} {:>7} {:>7} {:>6} {:<10} {}\n", "model", "params_B",
                     "active_B", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq", "activation",
                     "experts");
}

std::string model_row(const ModelSpec& m) {
  const std::string experts =
      m.moe() ? fmt::format("{} x {}, top-{}{}", m.experts, m.expert_width(), m.experts_per_token,
                            m.shared_experts > 0 ? fmt::format(", {} shared", m.shared_experts) : "")
              : "-";
  return fmt::format("{:<22} {:>9.3f} {:>9.3f} {:>6} {:>6} {:>5} {:>8} {:>7} {:>7} {:>6} {:<10} {}\n", m.name,
                     workloads::parameter_count(m) / 1e9, workloads::active_parameter_count(m) / 1e9, m.layers,
                     m.hidden, m.heads, m.kv_heads, m.ffn_hidden, m.vocab, m.seq_length, to_string(m.activation),
                     experts);
}

json model_json(const ModelSpec& m) {
  return {{"name", m.name},
          {"params", static_cast<std::int64_t>(std::llround(workloads::parameter_count(m)))},
          {"params_B", tidy(workloads::parameter_count(m) / 1e9)},
          {"active_params_B", tidy(workloads::active_parameter_count(m) / 1e9)},
          {"experts", m.experts},
          {"experts_per_token", m.experts_per_token},
          {"shared_experts", m.shared_experts},
          {"expert_ffn_hidden", m.moe() ? m.expert_width() : 0},
          {"layers", m.layers},
          {"hidden", m.hidden},
          {"heads", m.heads},
          {"kv_heads", m.kv_heads},
          {"ffn_hidden", m.ffn_hidden},
          {"vocab", m.vocab},
          {"seq_length", m.seq_length},
          {"activation", std::string(to_string(m.activation))},
          {"norm", std::string(to_string(m.norm))},
          {"positions", std::string(to_string(m.positions))},
          {"tied_embeddings", m.tied_embeddings},
          {"bias", m.bias},
          {"causal", m.causal},
          {"source", m.source}};
}

std::string_view work_name(workloads::Work w) {
  switch (w) {
    case workloads::Work::Gemm: return "gemm";
    case workloads::Work::AttentionGemm: return "attention-gemm";
    case workloads::Work::FusedAttention: return "fused-attention";
    case workloads::Work::Stream: return "stream";
    case workloads::Work::AttentionStream: return "attention-stream";
  }
  return "?";
}

std::string kernel_rows() {
  const auto& c = workloads::compute_constants();
  std::string out = fmt::format(
      "{:<10} {:>5} {:>5} {:>6} {:>7} {:>7} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7} {:>6} {:>6} {:>7} {:>7}\n", "arch",
      "gemm", "fp8", "attn", "half_mn", "half_k", "stream", "attn_s", "fa_fwd", "fa_bwd", "fa_seq", "fa_head",
      "fa2_fw", "fa2_bw", "fa2_seq", "fa2_hd");
  for (const auto& a : workloads::architectures())
    out += fmt::format("{:<10} {:>5.3f} {:>5.3f} {:>6.3f} {:>7g} {:>7g} {:>6.2f} {:>6.2f} {:>6.3f} {:>6.3f} {:>7g} {:>7g} "
                       "{:>6.3f} {:>6.3f} {:>7g} {:>7g}\n",
                       a.name, a.gemm, a.gemm_fp8, a.attention_gemm, a.gemm_half_mn, a.gemm_half_k, a.stream,
                       a.attention_stream, a.flash.forward, a.flash.backward, a.flash.half_seq, a.flash.half_head,
                       a.flash2.forward, a.flash2.backward, a.flash2.half_seq, a.flash2.half_head);
  out += fmt::format("{:<17} {}\n", "kernel", "work");
  for (const auto& k : workloads::kernel_works()) out += fmt::format("{:<17} {}\n", to_string(k.kind), work_name(k.work));
  return out + fmt::format("GEMM shape: m and n each scale efficiency by d / (d + half_mn), k by k / (k + half_k); "
                           "launch overhead {:g} us per kernel\n",
                           tidy(to_microseconds(c.launch_overhead)));
}

json kernels_json() {
  const auto& c = workloads::compute_constants();
  json works = json::array();
  for (const auto& k : workloads::kernel_works())
    works.push_back({{"kernel", std::string(to_string(k.kind))}, {"work", std::string(work_name(k.work))},
                     {"source", k.source}});
  json archs = json::array();
  for (const auto& a : workloads::architectures())
    archs.push_back({{"name", std::string(a.name)},
                     {"gemm", a.gemm},
                     {"gemm_fp8", a.gemm_fp8},
                     {"attention_gemm", a.attention_gemm},
                     {"gemm_half_mn", a.gemm_half_mn},
                     {"gemm_half_k", a.gemm_half_k},
                     {"stream", a.stream},
                     {"attention_stream", a.attention_stream},
                     {"flash_forward", a.flash.forward},
                     {"flash_backward", a.flash.backward},
                     {"flash_half_seq", a.flash.half_seq},
                     {"flash_half_head", a.flash.half_head},
                     {"flash2_forward", a.flash2.forward},
                     {"flash2_backward", a.flash2.backward},
                     {"flash2_half_seq", a.flash2.half_seq},
                     {"flash2_half_head", a.flash2.half_head},
                     {"source", a.source}});
  return {{"kernels", works},
          {"architectures", archs},
          {"launch_overhead_us", tidy(to_microseconds(c.launch_overhead))},
          {"source", c.source}};
}

}  // namespace

std::string catalog_table() {
  std::string out =
      "GPUs (dense peaks in TFLOP/s, int8 in TOPS; clock: the share of its peak clock a card sustains under "
      "compute-bound load, by its TDP per TFLOP/s against its architecture's reference card; prices approximate)\n" +
      gpu_header();
  for (const auto& gpu : topology::gpu_catalog()) out += gpu_row(gpu);
  out += "\nlinks (bandwidth of one link, one direction, line rate; latency per hop)\n" + link_header();
  for (const auto& link : topology::link_catalog()) out += link_row(link);
  out += "\nCPUs of PCIe servers (socket link: the socket interconnect as GPU peer traffic crosses it; root ports' "
         "PCIe generation)\n" + fmt::format("{:<16} {:<24} {:<6} {}\n", "name", "socket link", "pcie", "CPU");
  for (const auto& cpu : topology::cpu_catalog())
    out += fmt::format("{:<16} {:<24} {:<6} {}\n", cpu.name, cpu.socket_link, cpu.pcie, cpu.vendor_name);
  out += "\nmodel presets (params: weights, biases, norms and embeddings, counted exactly)\n" + model_header();
  for (const auto& model : workloads::model_presets()) out += model_row(model);
  out += "\ncompute model per GPU architecture (fraction of the precision's dense peak and of memory bandwidth a "
         "large kernel reaches)\n";
  return out + kernel_rows();
}

json catalog_json() {
  json gpus = json::array();
  for (const auto& gpu : topology::gpu_catalog()) gpus.push_back(gpu_json(gpu));
  json links = json::array();
  for (const auto& link : topology::link_catalog()) links.push_back(link_json(link));
  json cpus = json::array();
  for (const auto& cpu : topology::cpu_catalog())
    cpus.push_back({{"name", cpu.name}, {"vendor_name", cpu.vendor_name}, {"socket_link", cpu.socket_link},
                    {"pcie", cpu.pcie}, {"source", cpu.source}});
  json models = json::array();
  for (const auto& model : workloads::model_presets()) models.push_back(model_json(model));
  return {{"gpus", gpus}, {"links", links}, {"cpus", cpus}, {"models", models}, {"compute", kernels_json()}};
}

}  // namespace dtsim::results
