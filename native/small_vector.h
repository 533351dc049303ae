// A vector that keeps its first N elements inline (no heap allocation on the
// fast path's common sizes: a handful of arguments, a few dozen signature
// words), and moves to the heap only beyond that.
#ifndef REFIMPL_NATIVE_SMALL_VECTOR_H_
#define REFIMPL_NATIVE_SMALL_VECTOR_H_

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace refimpl {

template <typename T, std::size_t N>
class SmallVector {
 public:
  SmallVector() = default;
  SmallVector(const SmallVector& other) { Append(other); }
  SmallVector(SmallVector&& other) noexcept { MoveFrom(std::move(other)); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      clear();
      Append(other);
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      clear();
      ReleaseHeap();
      MoveFrom(std::move(other));
    }
    return *this;
  }
  ~SmallVector() {
    for (std::size_t i = 0; i < size_; ++i) begin_[i].~T();
    if (OnHeap()) ::operator delete(begin_);
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return begin_; }
  const T* data() const { return begin_; }
  T* begin() { return begin_; }
  T* end() { return begin_ + size_; }
  const T* begin() const { return begin_; }
  const T* end() const { return begin_ + size_; }
  T& operator[](std::size_t i) { return begin_[i]; }
  const T& operator[](std::size_t i) const { return begin_[i]; }
  T& back() { return begin_[size_ - 1]; }

  void push_back(const T& value) { emplace_back(value); }
  void push_back(T&& value) { emplace_back(std::move(value)); }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) Grow(capacity_ * 2);
    T* slot = new (begin_ + size_) T(std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }
  void resize(std::size_t n) {
    if (n > capacity_) Grow(n);
    while (size_ > n) begin_[--size_].~T();
    while (size_ < n) new (begin_ + size_++) T();
  }
  void clear() {
    for (std::size_t i = 0; i < size_; ++i) begin_[i].~T();
    size_ = 0;
  }

 private:
  T* InlineStorage() { return reinterpret_cast<T*>(&inline_); }
  bool OnHeap() const { return begin_ != reinterpret_cast<const T*>(&inline_); }

  void Grow(std::size_t capacity) {
    T* bigger = static_cast<T*>(::operator new(capacity * sizeof(T)));
    for (std::size_t i = 0; i < size_; ++i) {
      new (bigger + i) T(std::move(begin_[i]));
      begin_[i].~T();
    }
    ReleaseHeap();
    begin_ = bigger;
    capacity_ = capacity;
  }
  void ReleaseHeap() {
    if (OnHeap()) ::operator delete(begin_);
    begin_ = InlineStorage();
    capacity_ = N;
  }
  void Append(const SmallVector& other) {
    for (const T& value : other) push_back(value);
  }
  void MoveFrom(SmallVector&& other) {
    if (other.OnHeap()) {  // steal the heap block
      begin_ = other.begin_;
      size_ = other.size_;
      capacity_ = other.capacity_;
      other.begin_ = other.InlineStorage();
      other.size_ = 0;
      other.capacity_ = N;
      return;
    }
    for (T& value : other) push_back(std::move(value));
    other.clear();
  }

  typename std::aligned_storage<sizeof(T) * N, alignof(T)>::type inline_;
  T* begin_ = InlineStorage();
  std::size_t size_ = 0;
  std::size_t capacity_ = N;
};

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_SMALL_VECTOR_H_
