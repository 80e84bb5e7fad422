// Small-sample statistics (results/statistics.hpp).
#include "attnlab/results/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace attnlab {

namespace {

constexpr double stats_pi = 3.14159265358979323846;
constexpr double stats_nan = std::numeric_limits<double>::quiet_NaN();
constexpr double stats_eps = std::numeric_limits<double>::epsilon();

void stats_require(bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(what);
}

// lgamma(x) - ((x - 1/2) ln x - x + ln(2 pi)/2) for x >= 8: Stirling's series, whose next term is below 1e-16.
double stats_stirling_correction(double x) {
    static const double coefficients[] = {1.0 / 12,   -1.0 / 360,        1.0 / 1260, -1.0 / 1680,
                                          1.0 / 1188, -691.0 / 360360.0, 1.0 / 156,  -3617.0 / 122400.0};
    const double r2 = 1 / (x * x);
    double sum = 0;
    for (int i = 7; i >= 0; --i) sum = sum * r2 + coefficients[i];
    return sum / x;
}

// e - ln(1 + e) for e > -1; a series in r = e/(2+e) near 0, where the subtraction would cancel.
double stats_log1p_remainder(double e) {
    if (std::abs(e) > 0.5) return e - std::log1p(e);
    // ln(1+e) = 2 atanh(r) = 2 (r + r^3/3 + r^5/5 + ...) and e - 2r = e r.
    const double r = e / (2 + e), r2 = r * r;
    double sum = 0, power = r * r2;
    for (int k = 3; power != 0 && std::abs(power) > 1e-18 * std::abs(e * r); k += 2, power *= r2) sum += power / k;
    return e * r - 2 * sum;
}

// a - (a+b) x = (a+b) y - b, DiDonato and Morris' lambda, from the smaller (the exact one) of x and y: near the
// mean it is ~sqrt(a+b), and a - (a+b) x with x near 1 would leave it with the rounding of a number ~a.
double stats_beta_lambda(double a, double b, double x, double y) {
    return x <= y ? std::fma(-b, x, std::fma(-a, x, a)) : std::fma(a, y, std::fma(b, y, -b));
}

// ln(x^a y^b / B(a, b)) with y = 1 - x. With lgamma alone, ln B(a, b) loses ~1e-11 at a, b ~ 1e4 to the
// cancellation of terms ~1e5, so the large parameters go through Stirling's form (as in DiDonato and Morris'
// TOMS 708), whose terms stay small where the result is not negligible.
double stats_log_beta_power(double a, double b, double x, double y) {
    // ln of the larger of x, y through log1p of the smaller, which is the exact one: b ln y matters at b ~ 1e4.
    const double log_x = x <= y ? std::log(x) : std::log1p(-y);
    const double log_y = x <= y ? std::log1p(-x) : std::log(y);
    const double big = std::max(a, b), small = std::min(a, b);
    if (big < 8) return a * log_x + b * log_y - (std::lgamma(a) + std::lgamma(b) - std::lgamma(a + b));
    if (small < 8) {
        // lgamma(L) - lgamma(L + s) = -(L - 1/2) log1p(s/L) - s ln(L + s) + s + corr(L) - corr(L + s).
        const double small_var = a < b ? x : y, log_big_var = a < b ? log_y : log_x;
        return big * log_big_var + small * std::log(small_var * (a + b)) - std::lgamma(small) +
               (big - 0.5) * std::log1p(small / big) - small - stats_stirling_correction(big) +
               stats_stirling_correction(a + b);
    }
    // x^a y^b / B(a, b) = sqrt(a b / (2 pi (a+b))) exp(-(a u + b v) - corr) with u = rlog1(-lambda/a),
    // v = rlog1(lambda/b). Far from the mean (|e| > 1/2), ln(1 + e) from x (a+b)/a itself: 1 + e would lose
    // the digits of a small x.
    const double lambda = stats_beta_lambda(a, b, x, y);
    const double e_x = -lambda / a, e_y = lambda / b;
    const double u = std::abs(e_x) > 0.5 ? e_x - std::log(x * (a + b) / a) : stats_log1p_remainder(e_x);
    const double v = std::abs(e_y) > 0.5 ? e_y - std::log(y * (a + b) / b) : stats_log1p_remainder(e_y);
    const double correction =
        stats_stirling_correction(a) + stats_stirling_correction(b) - stats_stirling_correction(a + b);
    return -(a * u + b * v) + 0.5 * std::log(a * b / (a + b)) - 0.5 * std::log(2 * stats_pi) - correction;
}

// I_x(a, b) / (x^a y^b / B(a, b)) for x < (a+1)/(a+b+2): DiDonato and Morris' continued fraction (TOMS 708's
// bfrac) 1/(beta_0 + alpha_1/(beta_1 + alpha_2/(beta_2 + ...))), by Lentz's method. Numerical Recipes' form of
// the same expansion cancels in 1 + aa d near the mean at large a (~4e-13 at a ~ 5000); this one is written in
// lambda and stays within a few ulps. Converges in O(sqrt(max(a, b))) terms.
double stats_beta_fraction(double a, double b, double x, double y) {
    const double tiny = 1e-300;
    const double c = stats_beta_lambda(a, b, x, y) + 1, c0 = b / a, c1 = 1 / a + 1, y1 = y + 1;
    double g = c / c1;
    if (std::abs(g) < tiny) g = tiny;
    double lentz_c = g, lentz_d = 0, p = 1, s = a + 1;
    for (int n = 1; n <= 100000; ++n) {
        const double t = n / a, w = n * (b - n) * x, e = a / s;
        const double alpha = p * (p + c0) * e * e * (w * x);
        const double beta = n + w / s + (t + 1) / (c1 + t + t) * (c + n * y1);
        p = t + 1;
        s += 2;
        lentz_d = beta + alpha * lentz_d;
        if (std::abs(lentz_d) < tiny) lentz_d = tiny;
        lentz_c = beta + alpha / lentz_c;
        if (std::abs(lentz_c) < tiny) lentz_c = tiny;
        lentz_d = 1 / lentz_d;
        const double step = lentz_c * lentz_d;
        g *= step;
        if (std::abs(step - 1) <= stats_eps) return 1 / g;
    }
    throw std::runtime_error("regularized_incomplete_beta: no convergence at a = " + std::to_string(a) +
                             ", b = " + std::to_string(b) + ", x = " + std::to_string(x));
}

// I_x(a, b) with y = 1 - x given apart, so that a caller that knows the smaller of the two exactly keeps its digits.
double stats_incomplete_beta(double a, double b, double x, double y) {
    if (x <= 0) return 0;
    if (y <= 0) return 1;
    if (x < (a + 1) / (a + b + 2)) return std::exp(stats_log_beta_power(a, b, x, y)) * stats_beta_fraction(a, b, x, y);
    return 1 - std::exp(stats_log_beta_power(b, a, y, x)) * stats_beta_fraction(b, a, y, x);
}

void stats_require_df(double df) {
    stats_require(df > 0 && std::isfinite(df), "Student's t: df must be finite and > 0");
}

// P(T > t) for t >= 0: 1/2 I_{df/(df+t^2)}(df/2, 1/2), with w = t/sqrt(df) kept from overflowing in w^2.
double stats_t_upper_tail(double t, double df) {
    const double w = t / std::sqrt(df);
    if (w <= 1) {
        const double z = w * w;
        return 0.5 * stats_incomplete_beta(df / 2, 0.5, 1 / (1 + z), z / (1 + z));
    }
    const double z = 1 / (w * w);
    return 0.5 * stats_incomplete_beta(df / 2, 0.5, z / (1 + z), 1 / (1 + z));
}

double stats_t_density(double t, double df) {
    const double w = std::abs(t) / std::sqrt(df);
    const double log1p_w2 = w <= 1 ? std::log1p(w * w) : 2 * std::log(w) + std::log1p(1 / (w * w));
    return std::exp(std::lgamma((df + 1) / 2) - std::lgamma(df / 2) - 0.5 * std::log(df * stats_pi) -
                    (df + 1) / 2 * log1p_w2);
}

// The t >= 0 with P(T > t) = q, q in (0, 1/2]. The tail is convex in t, so Newton's steps approach the root from
// below; the bracket [lo, hi] catches a step that a poor density estimate throws out.
double stats_t_upper_quantile(double q, double df) {
    if (q == 0.5) return 0;
    double lo = 0, hi = 1;
    while (stats_t_upper_tail(hi, df) > q) {
        lo = hi;
        hi *= 2;
    }
    double t = 0.5 * (lo + hi);
    for (int i = 0; i < 1000; ++i) {
        const double excess = stats_t_upper_tail(t, df) - q;
        if (excess == 0) return t;
        (excess > 0 ? lo : hi) = t;
        double next = t + excess / stats_t_density(t, df);
        if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
        if (std::abs(next - t) <= 1e-15 * t) return next;
        t = next;
    }
    return t;
}

struct stats_moments {
    double mean, sd;  // sd with n - 1 (NaN for n < 2)
};
stats_moments stats_mean_sd(const std::vector<double>& x) {
    const double n = static_cast<double>(x.size());
    if (x.empty()) return {stats_nan, stats_nan};
    const double mean = std::accumulate(x.begin(), x.end(), 0.0) / n;
    if (x.size() < 2) return {mean, stats_nan};
    double squares = 0;
    for (double v : x) squares += (v - mean) * (v - mean);
    return {mean, std::sqrt(squares / (n - 1))};
}

// One-sided p of H0: mean <= bound against mean > bound (sign = 1) or of H0: mean >= bound (sign = -1).
double stats_one_sided_p(const std::vector<double>& x, double bound, double sign) {
    if (x.size() < 2) return stats_nan;
    const stats_moments m = stats_mean_sd(x);
    const double shift = sign * (m.mean - bound);
    if (m.sd == 0) return shift > 0 ? 0 : 1;
    const double t = shift / (m.sd / std::sqrt(static_cast<double>(x.size())));
    return student_t_cdf(-t, static_cast<double>(x.size() - 1));
}

void stats_require_confidence(double confidence) {
    stats_require(confidence > 0 && confidence < 1, "confidence must be in (0, 1)");
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
    stats_require(a > 0 && b > 0 && std::isfinite(a) && std::isfinite(b), "incomplete beta: a and b must be > 0");
    stats_require(x >= 0 && x <= 1, "incomplete beta: x must be in [0, 1]");
    return stats_incomplete_beta(a, b, x, 1 - x);
}

double student_t_cdf(double t, double df) {
    stats_require_df(df);
    if (std::isnan(t)) return stats_nan;
    const double tail = stats_t_upper_tail(std::abs(t), df);
    return t < 0 ? tail : 1 - tail;
}

double student_t_quantile(double p, double df) {
    stats_require_df(df);
    stats_require(p > 0 && p < 1, "student_t_quantile: p must be in (0, 1)");
    // 1 - p is exact for p >= 1/2, so the upper half loses nothing by going through the tail.
    return p < 0.5 ? -stats_t_upper_quantile(p, df) : stats_t_upper_quantile(1 - p, df);
}

double beta_quantile(double p, double a, double b) {
    stats_require(a > 0 && b > 0 && std::isfinite(a) && std::isfinite(b), "beta_quantile: a and b must be > 0");
    stats_require(p >= 0 && p <= 1, "beta_quantile: p must be in [0, 1]");
    double lo = 0, hi = 1;
    if (p == 0) return lo;
    if (p == 1) return hi;
    // I_x is increasing in x; halving until lo and hi are neighbouring doubles also gives a small
    // quantile its full relative precision.
    for (;;) {
        const double mid = 0.5 * (lo + hi);
        if (mid <= lo || mid >= hi) return mid;
        (regularized_incomplete_beta(a, b, mid) < p ? lo : hi) = mid;
    }
}

proportion_interval clopper_pearson(int k, int n, double confidence) {
    stats_require(n >= 1, "clopper_pearson: n must be >= 1");
    stats_require(k >= 0 && k <= n, "clopper_pearson: k must be in [0, n]");
    stats_require_confidence(confidence);
    const double alpha = 1 - confidence;
    return {k == 0 ? 0.0 : beta_quantile(alpha / 2, k, n - k + 1),
            k == n ? 1.0 : beta_quantile(1 - alpha / 2, k + 1, n - k)};
}

double fisher_exact_two_sided(int k1, int n1, int k2, int n2) {
    stats_require(n1 >= 0 && n2 >= 0, "fisher_exact_two_sided: n1 and n2 must be >= 0");
    stats_require(k1 >= 0 && k1 <= n1 && k2 >= 0 && k2 <= n2, "fisher_exact_two_sided: k must be in [0, n]");
    // A zero margin leaves a single table, of probability exactly 1 (scipy returns 1 there too).
    const int successes = k1 + k2, total = n1 + n2;
    auto log_choose = [](int n, int k) {
        return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
    };
    const double log_margins = log_choose(total, successes);
    auto log_p = [&](int x) { return log_choose(n1, x) + log_choose(n2, successes - x) - log_margins; };
    // The tolerance makes tables that are equally likely in exact arithmetic count as such after rounding.
    const double limit = log_p(k1) + std::log1p(1e-7);
    double p = 0;
    for (int x = std::max(0, successes - n2); x <= std::min(successes, n1); ++x) {
        const double lp = log_p(x);
        if (lp <= limit) p += std::exp(lp);
    }
    return std::min(1.0, p);
}

double fisher_smallest_p(int n1, int n2) {
    stats_require(n1 >= 0 && n2 >= 0, "fisher_smallest_p: n1 and n2 must be >= 0");
    double smallest = 1;
    for (int k1 = 0; k1 <= n1; ++k1)
        for (int k2 = 0; k2 <= n2; ++k2) smallest = std::min(smallest, fisher_exact_two_sided(k1, n1, k2, n2));
    return smallest;
}

std::vector<double> holm_adjust(const std::vector<double>& p) {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < p.size(); ++i) {
        if (std::isnan(p[i])) continue;
        stats_require(p[i] >= 0 && p[i] <= 1, "holm_adjust: p-values must be in [0, 1]");
        order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return p[i] < p[j]; });
    std::vector<double> adjusted(p.size(), stats_nan);
    const double m = static_cast<double>(order.size());
    double running = 0;
    for (std::size_t j = 0; j < order.size(); ++j) {
        running = std::max(running, std::min(1.0, (m - static_cast<double>(j)) * p[order[j]]));
        adjusted[order[j]] = running;
    }
    return adjusted;
}

mean_interval one_sample_t(const std::vector<double>& x, double confidence) {
    stats_require_confidence(confidence);
    mean_interval r;
    r.n = static_cast<int>(x.size());
    const stats_moments m = stats_mean_sd(x);
    r.mean = r.low = r.high = m.mean;
    r.sd = m.sd;
    if (r.n < 2) {
        r.p = stats_nan;
        return r;
    }
    r.df = r.n - 1;
    const double se = m.sd / std::sqrt(static_cast<double>(r.n));
    const double half = student_t_quantile((1 + confidence) / 2, r.df) * se;
    r.low = r.mean - half;
    r.high = r.mean + half;
    if (se == 0)
        r.p = r.mean == 0 ? 1 : 0;
    else
        r.p = 2 * student_t_cdf(-std::abs(r.mean / se), r.df);
    return r;
}

double one_sided_p_above(const std::vector<double>& x, double bound) { return stats_one_sided_p(x, bound, 1); }

double one_sided_p_below(const std::vector<double>& x, double bound) { return stats_one_sided_p(x, bound, -1); }

mean_interval welch_t(const std::vector<double>& a, const std::vector<double>& b, double confidence) {
    stats_require_confidence(confidence);
    mean_interval r;
    r.n = static_cast<int>(a.size() + b.size());
    const stats_moments ma = stats_mean_sd(a), mb = stats_mean_sd(b);
    r.mean = r.low = r.high = ma.mean - mb.mean;
    if (a.size() < 2 || b.size() < 2) {
        r.sd = stats_nan;
        r.p = stats_nan;
        return r;
    }
    const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
    const double va = ma.sd * ma.sd / na, vb = mb.sd * mb.sd / nb;
    r.sd = std::sqrt(va + vb);
    if (r.sd == 0) {
        // Welch's df is 0/0 here; the interval is the point whatever the df.
        r.df = stats_nan;
        r.p = r.mean == 0 ? 1 : 0;
        return r;
    }
    r.df = (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1));
    const double half = student_t_quantile((1 + confidence) / 2, r.df) * r.sd;
    r.low = r.mean - half;
    r.high = r.mean + half;
    r.p = 2 * student_t_cdf(-std::abs(r.mean / r.sd), r.df);
    return r;
}

double pearson_correlation(const std::vector<double>& a, const std::vector<double>& b) {
    stats_require(a.size() == b.size(), "pearson_correlation: the samples differ in length");
    if (a.size() < 3) return stats_nan;
    const double ma = stats_mean_sd(a).mean, mb = stats_mean_sd(b).mean;
    double sab = 0, saa = 0, sbb = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        sab += (a[i] - ma) * (b[i] - mb);
        saa += (a[i] - ma) * (a[i] - ma);
        sbb += (b[i] - mb) * (b[i] - mb);
    }
    if (saa == 0 || sbb == 0) return stats_nan;
    return std::clamp(sab / std::sqrt(saa * sbb), -1.0, 1.0);
}

int seeds_needed(double sd, double margin, double alpha, int max_n) {
    stats_require(sd >= 0 && std::isfinite(sd), "seeds_needed: sd must be finite and >= 0");
    stats_require(margin > 0, "seeds_needed: margin must be > 0");
    stats_require(alpha > 0 && alpha < 1, "seeds_needed: alpha must be in (0, 1)");
    stats_require(max_n >= 2, "seeds_needed: max_n must be >= 2");
    if (sd == 0) return 2;
    for (int n = 2; n <= max_n; ++n) {
        // The tail alpha/2 directly: 1 - alpha/2 would round a small Bonferroni alpha.
        if (stats_t_upper_quantile(alpha / 2, n - 1) * sd / std::sqrt(static_cast<double>(n)) < margin) return n;
    }
    return max_n + 1;
}

}  // namespace attnlab
