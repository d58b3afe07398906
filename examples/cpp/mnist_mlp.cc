// Data-parallel training of a small MLP on Fashion-MNIST with horovodcpp.
//
// Every rank holds a full copy of the model and trains on its own shard of
// each epoch's (identically shuffled) training set. After each backward
// pass the gradients of every parameter tensor are averaged across ranks
// with one allreduce_async per tensor, so all ranks apply the same update
// and the parameters stay bit-identical, which the program checks at the end.
//
//   mpirun -np 2 build/examples/cpp/mnist_mlp [--epochs 3] [--batch-size 32]
//
// Only the public API is used: #include <horovodcpp/horovodcpp.h>.
#include <horovodcpp/horovodcpp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "idx_reader.h"

namespace {

constexpr int kInputs = 28 * 28;
constexpr int kHidden = 128;
constexpr int kClasses = 10;

// ---------------------------------------------------------------- options

struct Options {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int epochs = 3;
  int batch_size = 32;  // per rank
  double lr = 0.01;     // per rank; multiplied by hvd::size()
  double momentum = 0.9;
  int log_interval = 100;  // batches
  std::uint64_t seed = 42;
};

void print_usage(std::FILE* out, const char* argv0) {
  std::fprintf(out,
               "usage: %s [options]\n"
               "  --data-dir DIR      Fashion-MNIST IDX .gz files (default "
               "/usr/share/datasets/fashion-mnist)\n"
               "  --epochs N          training epochs (default 3)\n"
               "  --batch-size N      minibatch size per rank (default 32)\n"
               "  --lr X              learning rate per rank, scaled by the number of ranks "
               "(default 0.01)\n"
               "  --momentum X        SGD momentum (default 0.9)\n"
               "  --log-interval N    log every N batches on rank 0 (default 100)\n"
               "  --seed N            seed of the initialisation and the shuffling (default 42)\n",
               argv0);
}

// Parses "--flag value" and "--flag=value". Returns false on --help;
// throws std::invalid_argument on a bad flag or value.
bool parse_args(int argc, char** argv, Options* opts) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") return false;
    std::string value;
    const auto eq = flag.find('=');
    if (eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw std::invalid_argument("missing value for " + flag);
    }
    const std::string bad = "bad value for " + flag + ": " + value;
    auto to_int = [&](int min_value) {
      std::size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(value, &used);
      } catch (const std::logic_error&) {  // invalid_argument, out_of_range
        throw std::invalid_argument(bad);
      }
      if (used != value.size() || v < min_value || v > 1000000000) {
        throw std::invalid_argument(bad);
      }
      return static_cast<int>(v);
    };
    auto to_double = [&]() {
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(value, &used);
      } catch (const std::logic_error&) {
        throw std::invalid_argument(bad);
      }
      if (used != value.size() || !std::isfinite(v) || v < 0) {
        throw std::invalid_argument(bad);
      }
      return v;
    };
    if (flag == "--data-dir")
      opts->data_dir = value;
    else if (flag == "--epochs")
      opts->epochs = to_int(0);
    else if (flag == "--batch-size")
      opts->batch_size = to_int(1);
    else if (flag == "--lr")
      opts->lr = to_double();
    else if (flag == "--momentum")
      opts->momentum = to_double();
    else if (flag == "--log-interval")
      opts->log_interval = to_int(1);
    else if (flag == "--seed")
      opts->seed = static_cast<std::uint64_t>(to_int(0));
    else
      throw std::invalid_argument("unknown option " + flag);
  }
  return true;
}

// ---------------------------------------------------------------- data

struct Dataset {
  std::vector<std::uint8_t> images;  // count x kInputs pixels, 0..255
  std::vector<std::uint8_t> labels;  // count labels, 0..9
  std::size_t count = 0;
};

Dataset load_split(const std::string& dir, const std::string& prefix) {
  const std::string images_path = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string labels_path = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  for (const std::string& path : {images_path, labels_path}) {
    if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
      std::fclose(f);
    } else {
      throw std::runtime_error("Fashion-MNIST file " + path +
                               " not found; install it with `apt-get install "
                               "dataset-fashion-mnist` or pass --data-dir DIR");
    }
  }
  mnist::IdxArray images = mnist::read_idx_gz(images_path, 3);
  mnist::IdxArray labels = mnist::read_idx_gz(labels_path, 1);
  if (images.row_size() != static_cast<std::size_t>(kInputs)) {
    throw std::runtime_error(images_path + ": expected 28x28 images");
  }
  if (images.dims[0] != labels.dims[0]) {
    throw std::runtime_error(images_path + " and " + labels_path +
                             " hold different numbers of entries");
  }
  for (std::uint8_t label : labels.data) {
    if (label >= kClasses) throw std::runtime_error(labels_path + ": label out of range");
  }
  Dataset set;
  set.count = images.dims[0];
  set.images = std::move(images.data);
  set.labels = std::move(labels.data);
  return set;
}

// Copies the samples `indices` into a float batch scaled to [0, 1].
void gather_batch(const Dataset& set, const std::vector<std::size_t>& indices,
                  std::vector<float>* x, std::vector<std::uint8_t>* y) {
  x->resize(indices.size() * kInputs);
  y->resize(indices.size());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::uint8_t* src = set.images.data() + indices[i] * kInputs;
    float* dst = x->data() + i * kInputs;
    for (int k = 0; k < kInputs; ++k) dst[k] = static_cast<float>(src[k]) * (1.0f / 255.0f);
    (*y)[i] = set.labels[indices[i]];
  }
}

// The permutation of [0, n) for `epoch`: a Fisher-Yates shuffle driven by
// mt19937_64 (whose output is fully specified), so every rank and every
// standard library computes the same order.
std::vector<std::size_t> epoch_permutation(std::size_t n, std::uint64_t seed, int epoch) {
  std::vector<std::size_t> perm(n);
  for (std::size_t i = 0; i < n; ++i) perm[i] = i;
  std::mt19937_64 rng(seed * 1000003ULL + static_cast<std::uint64_t>(epoch) + 1);
  for (std::size_t i = n - 1; i > 0; --i) {
    const std::size_t j = static_cast<std::size_t>(rng() % (i + 1));
    std::swap(perm[i], perm[j]);
  }
  return perm;
}

// ---------------------------------------------------------------- model

// A parameter tensor with its gradient and momentum buffer. Weights are
// stored [in, out] (row-major) so the inner loops run over contiguous
// output features.
struct Param {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> value;
  std::vector<float> grad;
  std::vector<float> velocity;

  Param(std::string n, std::vector<std::int64_t> s) : name(std::move(n)), shape(std::move(s)) {
    std::size_t count = 1;
    for (std::int64_t d : shape) count *= static_cast<std::size_t>(d);
    value.assign(count, 0.0f);
    grad.assign(count, 0.0f);
    velocity.assign(count, 0.0f);
  }
};

// 784 -> 128 (ReLU) -> 10, softmax cross-entropy.
class Mlp {
 public:
  Mlp() {
    params_.emplace_back("fc1.weight", std::vector<std::int64_t>{kInputs, kHidden});
    params_.emplace_back("fc1.bias", std::vector<std::int64_t>{kHidden});
    params_.emplace_back("fc2.weight", std::vector<std::int64_t>{kHidden, kClasses});
    params_.emplace_back("fc2.bias", std::vector<std::int64_t>{kClasses});
  }

  std::vector<Param>& params() { return params_; }

  // He-normal weights, zero biases.
  void init_random(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const float std1 = std::sqrt(2.0f / kInputs);
    const float std2 = std::sqrt(2.0f / kHidden);
    for (float& w : params_[0].value) w = normal(rng) * std1;
    for (float& w : params_[2].value) w = normal(rng) * std2;
    std::fill(params_[1].value.begin(), params_[1].value.end(), 0.0f);
    std::fill(params_[3].value.begin(), params_[3].value.end(), 0.0f);
  }

  // Forward and backward pass over `n` samples; leaves the gradient of the
  // mean loss in each Param::grad. Returns how many samples were classified
  // correctly (before the update).
  int forward_backward(const float* x, const std::uint8_t* labels, int n) {
    forward(x, n);
    for (Param& p : params_) std::fill(p.grad.begin(), p.grad.end(), 0.0f);
    float* __restrict dw1 = params_[0].grad.data();
    float* __restrict db1 = params_[1].grad.data();
    float* __restrict dw2 = params_[2].grad.data();
    float* __restrict db2 = params_[3].grad.data();
    const float* __restrict w2 = params_[2].value.data();
    dlogits_.resize(static_cast<std::size_t>(n) * kClasses);
    dhidden_.resize(static_cast<std::size_t>(n) * kHidden);

    int correct = 0;
    const float inv_n = 1.0f / static_cast<float>(n);
    for (int i = 0; i < n; ++i) {
      const float* logit = logits_.data() + i * kClasses;
      float* dl = dlogits_.data() + i * kClasses;
      const int label = labels[i];
      if (argmax(logit) == label) ++correct;
      // softmax(logit) - onehot(label), divided by the batch size.
      const float max_logit = *std::max_element(logit, logit + kClasses);
      float sum = 0.0f;
      for (int j = 0; j < kClasses; ++j) {
        dl[j] = std::exp(logit[j] - max_logit);
        sum += dl[j];
      }
      const float scale = inv_n / sum;
      for (int j = 0; j < kClasses; ++j) dl[j] *= scale;
      dl[label] -= inv_n;

      // fc2: dW2 += h^T dl, db2 += dl, dh = (dl W2^T) * relu'(h).
      const float* h = hidden_.data() + i * kHidden;
      float* dh = dhidden_.data() + i * kHidden;
      for (int j = 0; j < kClasses; ++j) db2[j] += dl[j];
      for (int k = 0; k < kHidden; ++k) {
        const float hk = h[k];
        if (hk <= 0.0f) {
          dh[k] = 0.0f;
          continue;
        }
        const float* w2_row = w2 + k * kClasses;
        float* dw2_row = dw2 + k * kClasses;
        float acc = 0.0f;
        for (int j = 0; j < kClasses; ++j) {
          dw2_row[j] += hk * dl[j];
          acc += dl[j] * w2_row[j];
        }
        dh[k] = acc;
      }

      // fc1: dW1 += x^T dh, db1 += dh (i-k-j order; zero pixels skipped).
      const float* __restrict xi = x + static_cast<std::size_t>(i) * kInputs;
      for (int j = 0; j < kHidden; ++j) db1[j] += dh[j];
      for (int k = 0; k < kInputs; ++k) {
        const float a = xi[k];
        if (a == 0.0f) continue;
        float* __restrict row = dw1 + k * kHidden;
        for (int j = 0; j < kHidden; ++j) row[j] += a * dh[j];
      }
    }
    return correct;
  }

  // Number of correctly classified samples among `n`.
  int count_correct(const float* x, const std::uint8_t* labels, int n) {
    forward(x, n);
    int correct = 0;
    for (int i = 0; i < n; ++i) {
      if (argmax(logits_.data() + i * kClasses) == labels[i]) ++correct;
    }
    return correct;
  }

  // SGD with momentum: v = mu * v + g; w -= lr * v.
  void sgd_update(float lr, float momentum) {
    for (Param& p : params_) {
      float* __restrict w = p.value.data();
      float* __restrict v = p.velocity.data();
      const float* __restrict g = p.grad.data();
      const std::size_t count = p.value.size();
      for (std::size_t i = 0; i < count; ++i) {
        v[i] = momentum * v[i] + g[i];
        w[i] -= lr * v[i];
      }
    }
  }

 private:
  static int argmax(const float* values) {
    return static_cast<int>(std::max_element(values, values + kClasses) - values);
  }

  // hidden = relu(x W1 + b1), logits = hidden W2 + b2.
  void forward(const float* x, int n) {
    hidden_.resize(static_cast<std::size_t>(n) * kHidden);
    logits_.resize(static_cast<std::size_t>(n) * kClasses);
    const float* __restrict w1 = params_[0].value.data();
    const float* __restrict b1 = params_[1].value.data();
    const float* __restrict w2 = params_[2].value.data();
    const float* __restrict b2 = params_[3].value.data();
    for (int i = 0; i < n; ++i) {
      const float* __restrict xi = x + static_cast<std::size_t>(i) * kInputs;
      float* __restrict h = hidden_.data() + i * kHidden;
      for (int j = 0; j < kHidden; ++j) h[j] = b1[j];
      for (int k = 0; k < kInputs; ++k) {
        const float a = xi[k];
        if (a == 0.0f) continue;
        const float* __restrict row = w1 + k * kHidden;
        for (int j = 0; j < kHidden; ++j) h[j] += a * row[j];
      }
      for (int j = 0; j < kHidden; ++j) h[j] = std::max(h[j], 0.0f);

      float* __restrict logit = logits_.data() + i * kClasses;
      for (int j = 0; j < kClasses; ++j) logit[j] = b2[j];
      for (int k = 0; k < kHidden; ++k) {
        const float a = h[k];
        if (a == 0.0f) continue;
        const float* __restrict row = w2 + k * kClasses;
        for (int j = 0; j < kClasses; ++j) logit[j] += a * row[j];
      }
    }
  }

  std::vector<Param> params_;
  std::vector<float> hidden_, logits_, dlogits_, dhidden_;
};

// ---------------------------------------------------------------- distributed steps

// Averages every gradient tensor across ranks: one named allreduce_async per
// tensor (the coordinator may fuse them), then waits for all of them.
void allreduce_gradients(Mlp* model) {
  std::vector<hvd::Work> pending;
  pending.reserve(model->params().size());
  for (Param& p : model->params()) {
    pending.push_back(
        hvd::allreduce_async(hvd::view(p.grad.data(), p.shape), p.name, hvd::ReduceOp::kAverage));
  }
  for (const hvd::Work& work : pending) work.wait();
}

// Sums {correct, count} over all ranks.
void allreduce_counts(double counts[2], const std::string& name) {
  hvd::allreduce(hvd::view(counts, {2}), name, hvd::ReduceOp::kSum);
}

// FNV-1a over the bytes of a tensor, as int64 (the API has no uint64).
std::int64_t hash_bytes(const std::vector<float>& values) {
  std::uint64_t hash = 1469598103934665603ULL;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size() * sizeof(float); ++i) {
    hash = (hash ^ bytes[i]) * 1099511628211ULL;
  }
  std::int64_t out;
  std::memcpy(&out, &hash, sizeof(out));
  return out;
}

// Allgathers one hash per parameter tensor and compares every rank's hashes
// with rank 0's. Returns true if all parameters are bit-identical; otherwise
// rank 0 prints each differing tensor to stderr.
bool parameters_identical(Mlp* model) {
  std::vector<Param>& params = model->params();
  const auto num = static_cast<std::int64_t>(params.size());
  std::vector<std::int64_t> hashes;
  for (const Param& p : params) hashes.push_back(hash_bytes(p.value));
  const hvd::Tensor all = hvd::allgather(hvd::view(hashes.data(), {1, num}), "check.param_hashes");
  const std::int64_t ranks = all.shape().empty() ? 0 : all.shape()[0];
  if (ranks != hvd::size() || all.num_elements() != ranks * num) {
    throw std::runtime_error("allgather of the parameter hashes returned shape " +
                             hvd::shape_str(all.shape()));
  }
  const std::int64_t* gathered = all.data_as<std::int64_t>();
  bool identical = true;
  for (std::int64_t t = 0; t < num; ++t) {
    for (std::int64_t r = 1; r < ranks; ++r) {
      if (gathered[r * num + t] != gathered[t]) {
        identical = false;
        if (hvd::rank() == 0) {
          std::fprintf(stderr, "parameter %s differs between rank 0 and rank %lld\n",
                       params[static_cast<std::size_t>(t)].name.c_str(), static_cast<long long>(r));
        }
      }
    }
  }
  return identical;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---------------------------------------------------------------- main loop

int run(const Options& opts) {
  const int rank = hvd::rank();
  const int size = hvd::size();

  const Dataset train = load_split(opts.data_dir, "train");
  const Dataset test = load_split(opts.data_dir, "t10k");

  // Same starting point everywhere: rank 0 initialises, everybody receives.
  Mlp model;
  if (rank == 0) model.init_random(opts.seed);
  for (Param& p : model.params()) {
    hvd::broadcast(hvd::view(p.value.data(), p.shape), 0, "init." + p.name);
  }

  // Every rank gets the same number of samples (and so of batches, which
  // keeps the collectives in step); the last size-1 samples may be dropped.
  const std::size_t shard = train.count / static_cast<std::size_t>(size);
  const std::size_t batch = static_cast<std::size_t>(opts.batch_size);
  const std::size_t num_batches = (shard + batch - 1) / batch;
  const float lr = static_cast<float>(opts.lr * size);  // Horovod: scale by #ranks
  const float momentum = static_cast<float>(opts.momentum);
  if (rank == 0) {
    std::printf(
        "training on %d rank(s): %zu samples per rank per epoch, batch %zu per rank, "
        "lr %g (%g x %d)\n",
        size, shard, batch, static_cast<double>(lr), opts.lr, size);
    std::fflush(stdout);
  }

  std::vector<std::size_t> indices;
  std::vector<float> x;
  std::vector<std::uint8_t> y;
  const auto train_start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < opts.epochs; ++epoch) {
    const std::vector<std::size_t> perm = epoch_permutation(train.count, opts.seed, epoch);
    const auto epoch_start = std::chrono::steady_clock::now();
    auto log_start = epoch_start;
    double correct = 0, seen = 0;
    for (std::size_t b = 0; b < num_batches; ++b) {
      const std::size_t first = b * batch;
      const std::size_t n = std::min(batch, shard - first);
      indices.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        indices[i] =
            perm[(first + i) * static_cast<std::size_t>(size) + static_cast<std::size_t>(rank)];
      }
      gather_batch(train, indices, &x, &y);
      correct += model.forward_backward(x.data(), y.data(), static_cast<int>(n));
      seen += static_cast<double>(n);
      allreduce_gradients(&model);
      model.sgd_update(lr, momentum);

      if ((b + 1) % static_cast<std::size_t>(opts.log_interval) == 0) {
        double counts[2] = {correct, seen};
        allreduce_counts(counts, "train.accuracy");
        if (rank == 0) {
          const double elapsed = seconds_since(log_start);
          std::printf("Epoch[%d] Batch [%zu] Speed: %.2f samples/sec accuracy=%.6f\n", epoch, b + 1,
                      counts[1] / std::max(elapsed, 1e-9), counts[0] / counts[1]);
          std::fflush(stdout);
        }
        correct = seen = 0;
        log_start = std::chrono::steady_clock::now();
      }
    }
    if (rank == 0) {
      std::printf("Epoch[%d] Time cost=%.3f\n", epoch, seconds_since(epoch_start));
      std::fflush(stdout);
    }
  }
  const double train_seconds = seconds_since(train_start);

  // Test accuracy: rank r evaluates test images r, r+size, ...; Sum combines.
  double test_counts[2] = {0, 0};
  constexpr std::size_t kEvalChunk = 256;
  for (std::size_t start = static_cast<std::size_t>(rank); start < test.count;
       start += kEvalChunk * static_cast<std::size_t>(size)) {
    indices.clear();
    for (std::size_t i = start; i < test.count && indices.size() < kEvalChunk;
         i += static_cast<std::size_t>(size)) {
      indices.push_back(i);
    }
    gather_batch(test, indices, &x, &y);
    test_counts[0] += model.count_correct(x.data(), y.data(), static_cast<int>(indices.size()));
    test_counts[1] += static_cast<double>(indices.size());
  }
  allreduce_counts(test_counts, "test.accuracy");
  if (rank == 0) {
    std::printf("training time %.3f s\n", train_seconds);
    std::printf("test accuracy=%.4f\n", test_counts[0] / test_counts[1]);
    std::fflush(stdout);
  }

  if (!parameters_identical(&model)) return 1;
  if (rank == 0) {
    std::printf("parameters identical on all %d ranks\n", size);
    std::fflush(stdout);
  }
  return 0;
}

std::string rank_label() {
  try {
    if (hvd::is_initialized()) return std::to_string(hvd::rank());
  } catch (...) {
  }
  return "?";
}

// Shuts the runtime down on an error path, never throwing.
void shutdown_quietly() {
  try {
    hvd::shutdown();
  } catch (...) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  try {
    if (!parse_args(argc, argv, &opts)) {
      print_usage(stdout, argv[0]);
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    print_usage(stderr, argv[0]);
    return 2;
  }

  try {
    hvd::init();
    const int status = run(opts);
    hvd::shutdown();
    return status;
  } catch (const hvd::Error& e) {
    std::fprintf(stderr, "[rank %s] horovodcpp error: %s\n", rank_label().c_str(), e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %s] error: %s\n", rank_label().c_str(), e.what());
  }
  shutdown_quietly();
  return 1;
}
