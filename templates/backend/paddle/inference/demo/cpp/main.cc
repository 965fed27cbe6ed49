// Paddle Inference C++ demo on the {{ device_type }} device: loads a model, enables
// the custom device, runs warmup + timed repeats, prints latency and top-k.
//
//   ./{{ p }}_infer_demo MODEL_PREFIX [warmup=10] [repeats=30]
//   (MODEL_PREFIX.json or .pdmodel, plus MODEL_PREFIX.pdiparams)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "paddle_inference_api.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL_PREFIX [warmup] [repeats]\n", argv[0]);
    return 2;
  }
  const std::string prefix = argv[1];
  const int warmup = argc > 2 ? std::atoi(argv[2]) : 10;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 30;
  const std::string program = std::ifstream(prefix + ".json").good() ? prefix + ".json" : prefix + ".pdmodel";

  paddle_infer::Config config(program, prefix + ".pdiparams");
  config.EnableCustomDevice("{{ device_type }}", 0);
  auto predictor = paddle_infer::CreatePredictor(config);

  auto input = predictor->GetInputHandle(predictor->GetInputNames()[0]);
  std::vector<int> shape = input->shape();
  for (int& d : shape) d = d > 0 ? d : 1;
  const int numel = std::accumulate(shape.begin(), shape.end(), 1, std::multiplies<int>());
  std::vector<float> data(numel);
  for (int i = 0; i < numel; ++i) data[i] = static_cast<float>(i % 255) / 255.f;
  input->Reshape(shape);
  input->CopyFromCpu(data.data());

  for (int i = 0; i < warmup; ++i) predictor->Run();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    predictor->Run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  auto output = predictor->GetOutputHandle(predictor->GetOutputNames()[0]);
  const auto out_shape = output->shape();
  const int out_numel = std::accumulate(out_shape.begin(), out_shape.end(), 1, std::multiplies<int>());
  std::vector<float> out(out_numel);
  output->CopyToCpu(out.data());
  std::vector<int> order(out_numel);
  std::iota(order.begin(), order.end(), 0);
  const int k = std::min(5, out_numel);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) { return out[a] > out[b]; });

  std::printf("latency over %d runs after %d warmup: avg %.3f ms, min %.3f ms, max %.3f ms\n", repeats, warmup,
              std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size(), *std::min_element(ms.begin(), ms.end()),
              *std::max_element(ms.begin(), ms.end()));
  std::printf("top-%d:", k);
  for (int i = 0; i < k; ++i) std::printf(" %d:%.4f", order[i], out[order[i]]);
  std::printf("\n");
  return 0;
}
