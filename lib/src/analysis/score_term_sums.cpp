// Sums of the Taylor terms |s|^m / m! of attention scores (analysis/probe.hpp).
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attnlab/analysis/probe.hpp"

namespace attnlab {

score_term_sums::score_term_sums(int max_order)
    : terms_(static_cast<std::size_t>(std::max(max_order, 0)) + 1, 0.0), inverse_(terms_.size(), 0.0) {
    if (max_order < 0) throw std::invalid_argument("score_term_sums: max_order must be >= 0");
    for (std::size_t m = 1; m < inverse_.size(); ++m) inverse_[m] = 1.0 / static_cast<double>(m);
}

void score_term_sums::add(const double* s, int n) {
    if (n <= 0) return;
    abs_.resize(static_cast<std::size_t>(n));
    term_.assign(static_cast<std::size_t>(n), 1.0);  // |s|^0 / 0! = 1, also at s = 0
    for (int j = 0; j < n; ++j) {
        const double a = std::abs(s[j]);
        abs_[j] = a;
        abs_sum_ += a;
        if (!(a <= abs_max_)) abs_max_ = a;  // a NaN shows in the maximum too
    }
    pairs_ += static_cast<std::uint64_t>(n);
    terms_[0] += n;
    // |s|^m / m! as the running product (a/1)(a/2)...(a/m): it overflows only
    // where the term itself leaves double's range (|s| > ~700), unlike a^m then
    // / m!. Order by order over the n scores with four partial sums, so the
    // products of different scores overlap (1/m is tabled: a division here
    // would cost more than the rest).
    double* a = abs_.data();
    double* t = term_.data();
    for (std::size_t m = 1; m < terms_.size(); ++m) {
        const double f = inverse_[m];
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int j = 0;
        for (; j + 4 <= n; j += 4) {
            s0 += t[j] *= a[j] * f;
            s1 += t[j + 1] *= a[j + 1] * f;
            s2 += t[j + 2] *= a[j + 2] * f;
            s3 += t[j + 3] *= a[j + 3] * f;
        }
        for (; j < n; ++j) s0 += t[j] *= a[j] * f;
        const double sum = (s0 + s1) + (s2 + s3);
        if (sum == 0.0) break;  // every term underflowed (they are >= 0): the later ones are 0 too
        terms_[m] += sum;
    }
}

void score_term_sums::merge(const score_term_sums& other) {
    if (other.terms_.size() != terms_.size()) throw std::invalid_argument("score_term_sums: max_order differs");
    for (std::size_t m = 0; m < terms_.size(); ++m) terms_[m] += other.terms_[m];
    abs_sum_ += other.abs_sum_;
    if (!(other.abs_max_ <= abs_max_)) abs_max_ = other.abs_max_;
    pairs_ += other.pairs_;
}

int dominant_order(const std::vector<double>& mean_terms) {
    int best = 0;
    for (std::size_t m = 1; m < mean_terms.size(); ++m)
        if (mean_terms[m] > mean_terms[static_cast<std::size_t>(best)]) best = static_cast<int>(m);
    return best;
}

}  // namespace attnlab
