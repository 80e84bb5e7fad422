// Shape legend used in every shape comment of attnlab:
//   B  batch size           T  time (sequence length)
//   C  model dim (d_model)  NH heads      HS head size (C / NH)
//   F  MLP hidden size      V  vocabulary size
//   L  layers               N  rows = B * T
//   A  answer positions of a batch (rows that carry a target)
// Activations are row-major (N, C); head h of a row is columns [h*HS, (h+1)*HS).
#pragma once
#include <Eigen/Dense>

namespace attnlab {

template <class T>
using row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using row_vector = Eigen::Matrix<T, 1, Eigen::Dynamic>;

template <class T>
using matrix_map = Eigen::Map<row_matrix<T>>;
template <class T>
using const_matrix_map = Eigen::Map<const row_matrix<T>>;

// A (rows, cols) block inside a row-major buffer with row stride `stride`
// (one head of an (N, C) activation: stride C).
template <class T>
using strided_map = Eigen::Map<row_matrix<T>, 0, Eigen::OuterStride<>>;
template <class T>
using const_strided_map = Eigen::Map<const row_matrix<T>, 0, Eigen::OuterStride<>>;

}  // namespace attnlab
