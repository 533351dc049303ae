// The call signature of the fast path, and the cache keyed by it.
//
// A Signature is what a jitted call is cached under: a sequence of 64-bit
// words (tree structure, per-leaf type and shape, flags) plus a few opaque
// handles to host-language objects that cannot be reduced to words (static
// argument values, dict keys, custom pytree node data). This layer does not
// know what those handles are: it stores them with the way they must be
// compared, and leaves owning and comparing them to the caller (the Python
// bindings, which hold references and compare with Python's ==).
//
// The cache is not internally synchronized. Its user serializes every call
// (the bindings use the Python GIL), and compares handles only on a copy of
// the candidate list, because a comparison may run host code that lets
// another thread change the cache.
#ifndef REFIMPL_NATIVE_SIGNATURE_H_
#define REFIMPL_NATIVE_SIGNATURE_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "small_vector.h"

namespace refimpl {

// How the caller compares two handles in the same position.
enum class HandleCompare : std::uint8_t {
  kIdentity,  // the same object
  kEqual,     // host equality (identity implies equality)
  kStatic,    // same exact type and host equality, no identity shortcut
};

// The words of the fast path's signature (jit and pmap, called from Python
// or from C++: one encoding). A signature is
//   kHeader + x64 + 2 * the default matmul precision's key, #positional, #keyword,
//   per positional argument: kPositional, position, then its value;
//   per keyword argument (sorted by name): kKeyword, the name (a handle), its value;
// a value is kStatic + the value (a handle), or its pytree in preorder:
// a node word (with its arity, and node kind and data as handles) or a leaf
// word (kLeaf + LeafKind, then that kind's words). Values are spaced so no
// two kinds collide.
enum SignatureWord : std::uint64_t {
  kHeader = 0x5349470000000000ull,  // + x64 flag + 2 * precision key
  kPositional = 0x100,              // then: position
  kKeyword = 0x101,                 // (the name is a handle)
  kStatic = 0x102,                  // (the value is a handle)
  kTuple = 0x110,                   // then: arity
  kList = 0x111,
  kDict = 0x112,  // (sorted keys are handles)
  kNone = 0x113,
  kNamedTuple = 0x114,  // (the node kind is a handle)
  kCustomNode = 0x115,  // (node kind and node data are handles)
  kLeaf = 0x200,        // + LeafKind
};

// The kinds of argument leaves, and the words that follow each one's kLeaf.
enum LeafKind : std::uint8_t {
  kPjrtLeaf = 1,  // a device array: meta pointer, client pointer, device * 2 + committed
  kNdarrayLeaf,   // a host array: element type number, ndim, dims
  kNpScalarLeaf,  // a host scalar of a given type: element type number
  kBoolLeaf,      // host bool, int, float, complex (the value is the leaf's)
  kIntLeaf,
  kFloatLeaf,
  kComplexLeaf,
  kRefArrayLeaf,  // a reference-backend array: element type number, weak_type, ndim, dims
  kRefLeaf,       // a mutable reference holding a device array: as kPjrtLeaf, of that array
  kShardedLeaf,   // (pmap only) meta pointer, client pointer, axis, device count, devices
};

// Whether argument `position` of a call with `nargs` positional arguments
// is one of `nums` (static_argnums, donate_argnums; negative counts from
// the end).
inline bool ArgnumsContain(const std::vector<int>& nums, long position, long nargs) {
  for (int n : nums) {
    if (n == position || (n < 0 && n + nargs == position)) return true;
  }
  return false;
}

// Host scalars (bool, int, float, complex) are transferred per call.
inline bool IsHostScalarLeaf(std::uint8_t kind) {
  return kind == kBoolLeaf || kind == kIntLeaf || kind == kFloatLeaf || kind == kComplexLeaf;
}

struct Handle {
  void* object;
  HandleCompare compare;
};

class Signature {
 public:
  void Push(std::uint64_t word) { words_.push_back(word); }
  // A device array's words (kPjrtLeaf, kRefLeaf): its type, client and placement.
  void PushDeviceArray(const void* meta, const void* client, int device_index, bool committed) {
    Push(reinterpret_cast<std::uint64_t>(meta));
    Push(reinterpret_cast<std::uint64_t>(client));
    Push(static_cast<std::uint64_t>(device_index) * 2 + (committed ? 1 : 0));
  }
  void PushDims(int ndim, const std::int64_t* dims) {
    Push(static_cast<std::uint64_t>(ndim));
    for (int d = 0; d < ndim; ++d) Push(static_cast<std::uint64_t>(dims[d]));
  }
  // `object_hash` must agree with the comparison: equal objects, equal hashes.
  void PushHandle(void* object, HandleCompare compare, std::uint64_t object_hash) {
    handles_.push_back(Handle{object, compare});
    handle_hash_ = handle_hash_ * 0x100000001b3ull + object_hash;
  }
  // Computes the hash; call once, after the last Push/PushHandle.
  void Finish() {
    std::uint64_t h = 0xcbf29ce484222325ull ^ handle_hash_;
    for (std::uint64_t word : words_) {
      h ^= word + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      h *= 0x100000001b3ull;
    }
    hash_ = h;
  }

  std::uint64_t hash() const { return hash_; }
  const SmallVector<std::uint64_t, 48>& words() const { return words_; }
  const SmallVector<Handle, 8>& handles() const { return handles_; }

  // Equal hashes and words: the handles are all that is left to compare.
  bool SameWords(const Signature& other) const {
    return hash_ == other.hash_ && words_.size() == other.words_.size() &&
           handles_.size() == other.handles_.size() &&
           std::memcmp(words_.data(), other.words_.data(), words_.size() * sizeof(std::uint64_t)) ==
               0;
  }

 private:
  SmallVector<std::uint64_t, 48> words_;
  SmallVector<Handle, 8> handles_;
  std::uint64_t handle_hash_ = 0;
  std::uint64_t hash_ = 0;
};

// Signature -> entry. `Entry` has a member `Signature signature`.
template <typename Entry>
class SignatureCache {
 public:
  using EntryPtr = std::shared_ptr<Entry>;

  // Entries whose words match `signature` (most recently used first); the
  // caller compares their handles.
  template <std::size_t N>
  void Candidates(const Signature& signature, SmallVector<EntryPtr, N>* out) const {
    if (last_ && last_->signature.SameWords(signature)) out->push_back(last_);
    auto range = entries_.equal_range(signature.hash());
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second != last_ && it->second->signature.SameWords(signature)) {
        out->push_back(it->second);
      }
    }
  }
  // The entry cached under `signature`, or null. The most recent entry
  // first (with no handles, no host code runs), then every entry with the
  // same words whose handles `equal(signature, entry_signature)` says
  // match. `equal` may run host code that changes the cache: the
  // candidates are held while it runs.
  template <typename Equal>
  EntryPtr Find(const Signature& signature, Equal&& equal) {
    if (last_ && signature.handles().empty() && last_->signature.SameWords(signature)) {
      return last_;
    }
    SmallVector<EntryPtr, 4> candidates;
    Candidates(signature, &candidates);
    for (const EntryPtr& candidate : candidates) {
      if (signature.handles().empty() || equal(signature, candidate->signature)) {
        MarkUsed(candidate);
        return candidate;
      }
    }
    return nullptr;
  }
  const EntryPtr& last() const { return last_; }
  void MarkUsed(const EntryPtr& entry) {
    if (last_ != entry) last_ = entry;
  }
  void Insert(EntryPtr entry) {
    const std::uint64_t hash = entry->signature.hash();
    last_ = entry;
    entries_.emplace(hash, std::move(entry));
  }
  void Clear() {
    entries_.clear();
    last_.reset();
  }
  std::size_t size() const { return entries_.size(); }
  template <typename F>
  void ForEach(F&& visit) const {
    for (const auto& item : entries_) visit(*item.second);
  }

 private:
  std::unordered_multimap<std::uint64_t, EntryPtr> entries_;
  EntryPtr last_;  // the most recently used entry, checked first
};

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_SIGNATURE_H_
