// Small-sample statistics for comparing runs over seeds: Student's t and
// beta distributions, exact intervals for proportions, Fisher's exact test,
// Holm's adjustment, t-tests and the seed count a margin needs. Self-contained
// (std only); the definitions follow scipy.stats, which the tests check them against.
// Invalid arguments (a probability or p-value outside its range, df <= 0,
// k outside [0, n], vectors of unequal length) throw std::invalid_argument.
#pragma once
#include <vector>

namespace attnlab {

// I_x(a, b), a, b > 0: DiDonato-Morris continued fraction by Lentz for x < (a+1)/(a+b+2), else 1 - I_{1-x}(b, a).
double regularized_incomplete_beta(double a, double b, double x);
// P(T <= t) for Student's t with real df > 0: 1/2 I_{df/(df+t^2)}(df/2, 1/2) for the tail beyond |t|.
double student_t_cdf(double t, double df);
// The t with P(T <= t) = p, p in (0, 1): Newton's method on the tail, kept inside a bracket by bisection.
double student_t_quantile(double p, double df);
// The x in [0, 1] with I_x(a, b) = p, p in [0, 1]: bisection to the last bit of x.
double beta_quantile(double p, double a, double b);

struct proportion_interval {
    double low, high;
};
// Clopper-Pearson's exact interval for k successes in n >= 1 trials, from beta quantiles.
proportion_interval clopper_pearson(int k, int n, double confidence = 0.95);

// Two-sided Fisher p of [[k1, n1-k1], [k2, n2-k2]]: hypergeometric mass of same-margin tables <= (1+1e-7) p_obs.
double fisher_exact_two_sided(int k1, int n1, int k2, int n2);
// The smallest fisher_exact_two_sided over every outcome k1 in [0, n1], k2 in [0, n2] (n1 = n2 = 3: 0.1).
double fisher_smallest_p(int n1, int n2);

// Holm's adjusted p in input order: running max of min(1, (m - j) p_(j)) over sorted p; NaN stays NaN, not in m.
std::vector<double> holm_adjust(const std::vector<double>& p);

// A mean (or difference of means) with its Student-t interval and two-sided p for a mean (difference) of 0.
struct mean_interval {
    int n = 0;                 // observations (welch_t: both samples together)
    double mean = 0;           // NaN when a sample is empty
    double sd = 0;             // one_sample_t: sd with n - 1; welch_t: standard error of the difference (NaN: n < 2)
    double low = 0, high = 0;  // the interval; low = high = mean without one (a sample of fewer than 2)
    double p = 1;              // NaN without an interval
    double df = 0;             // degrees of freedom (0 without an interval; welch_t: NaN when both sds are 0)
};
// One-sample t: mean ± t((1+c)/2, n-1) sd/sqrt(n) and the p of H0: mean = 0 (sd = 0: p = 1 if mean = 0, else 0).
mean_interval one_sample_t(const std::vector<double>& x, double confidence = 0.95);
// One-sided t-test p of H0: mean <= bound against mean > bound (NaN for n < 2; sd = 0: 0 if mean > bound, else 1).
double one_sided_p_above(const std::vector<double>& x, double bound);
// One-sided t-test p of H0: mean >= bound against mean < bound (NaN for n < 2; sd = 0: 0 if mean < bound, else 1).
double one_sided_p_below(const std::vector<double>& x, double bound);
// Welch's t for mean(a) - mean(b), Welch-Satterthwaite df, as scipy's ttest_ind(equal_var=False); both sds 0: as above.
mean_interval welch_t(const std::vector<double>& a, const std::vector<double>& b, double confidence = 0.95);

// Pearson's correlation of paired samples, from centred sums; NaN for n < 3 or a sample without variance.
double pearson_correlation(const std::vector<double>& a, const std::vector<double>& b);

// Smallest n >= 2 with t(1 - alpha/2, n-1) sd/sqrt(n) < margin, trying n = 2, 3, ... (none to max_n: max_n + 1).
// alpha is two-sided: alpha/k for a Bonferroni worst case over k comparisons.
int seeds_needed(double sd, double margin, double alpha = 0.05, int max_n = 1000);

}  // namespace attnlab
