// Small-sample statistics (results/statistics.hpp) against scipy 1.10.1 (Debian's python3-scipy): each
// reference is the repr() of the scipy call in its comment. Where scipy itself is not accurate to 1e-9 (its
// t.ppf at a real or small df goes through cdflib's stdtrit, 2e-9 off at t.ppf(0.95, 4); betainc at a, b ~ 1e4
// through lgamma, ~1e-12 off), the reference is mpmath's at 60 digits and the comment says so.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attnlab/results/statistics.hpp"

using namespace attnlab;

namespace {

// Relative 1e-9: far above the rounding of either side, far below any error of method.
Approx stats_close(double reference) { return Approx(reference).epsilon(1e-9).margin(0); }

const double stats_nan = std::numeric_limits<double>::quiet_NaN();

}  // namespace

TEST_CASE("incomplete beta matches scipy.special.betainc", "[statistics]") {
    struct row {
        double a, b, x, expected;
    };
    const row rows[] = {
        {0.5, 0.5, 0.3, 0.3690101195655454},        // scipy.special.betainc(0.5, 0.5, 0.3)
        {2, 3, 0.4, 0.5247999999999999},            // scipy.special.betainc(2, 3, 0.4)
        {1.5, 7.25, 0.05, 0.14303295721639328},     // scipy.special.betainc(1.5, 7.25, 0.05)
        {10, 2, 0.95, 0.8981054088575682},          // scipy.special.betainc(10, 2, 0.95)
        {30, 40, 0.45, 0.6447480085585666},         // scipy.special.betainc(30, 40, 0.45)
        {500, 0.5, 0.999, 0.317310447309558},       // scipy.special.betainc(500, 0.5, 0.999)
        {1000, 1000, 0.49, 0.18555265943145985},    // scipy.special.betainc(1000, 1000, 0.49)
        {10000, 10000, 0.505, 0.9213529911182899},  // scipy.special.betainc(10000, 10000, 0.505)
        {5000, 50, 0.99, 0.4533314127812428},       // scipy.special.betainc(5000, 50, 0.99)
        {0.5, 10000, 1e-4, 0.842705982236001},      // scipy.special.betainc(0.5, 10000, 0.0001)
    };
    for (const row& r : rows) {
        INFO("a = " << r.a << ", b = " << r.b << ", x = " << r.x);
        CHECK(regularized_incomplete_beta(r.a, r.b, r.x) == stats_close(r.expected));
    }
    CHECK(regularized_incomplete_beta(2, 3, 0) == 0);
    CHECK(regularized_incomplete_beta(2, 3, 1) == 1);
    // I_x(a, b) = 1 - I_{1-x}(b, a): both sides of the switch at x = (a+1)/(a+b+2) agree.
    CHECK(regularized_incomplete_beta(7.5, 3.25, 0.62) + regularized_incomplete_beta(3.25, 7.5, 0.38) ==
          Approx(1).epsilon(1e-15));
}

TEST_CASE("incomplete beta keeps full precision at large a and b", "[statistics]") {
    // mpmath, 60 digits: x**a * (1-x)**b / (a * beta(a, b)) * hyp2f1(a + b, 1, a + 1, x) below the switch,
    // 1 - the same with a, b and x, 1-x swapped above it. scipy's own betainc is 5e-14 to 3e-12 off here.
    struct row {
        double a, b, x, expected;
    };
    const row rows[] = {
        {10000, 10000, 0.505, 0.9213529911183359},
        {5000, 50, 0.99, 0.45333141278250755},
        {0.5, 10000, 1e-4, 0.8427059822366714},
        {8000, 3, 0.9995, 0.2378835392681651},
    };
    for (const row& r : rows) {
        INFO("a = " << r.a << ", b = " << r.b << ", x = " << r.x);
        CHECK(regularized_incomplete_beta(r.a, r.b, r.x) == Approx(r.expected).epsilon(1e-14));
    }
}

TEST_CASE("Student's t cdf matches scipy.stats.t.cdf", "[statistics]") {
    struct row {
        double t, df, expected;
    };
    const row rows[] = {
        {-3.2, 1, 0.09641124797922955},       // scipy.stats.t.cdf(-3.2, 1)
        {0.7, 1, 0.6944001122142147},         // scipy.stats.t.cdf(0.7, 1)
        {2.1, 1, 0.858536971878491},          // scipy.stats.t.cdf(2.1, 1)
        {-3.2, 2.5, 0.03170551411819074},     // scipy.stats.t.cdf(-3.2, 2.5)
        {0.7, 2.5, 0.7282975284052259},       // scipy.stats.t.cdf(0.7, 2.5)
        {2.1, 2.5, 0.9277487776225781},       // scipy.stats.t.cdf(2.1, 2.5)
        {-3.2, 4, 0.01645040530046948},       // scipy.stats.t.cdf(-3.2, 4)
        {0.7, 4, 0.738749917203275},          // scipy.stats.t.cdf(0.7, 4)
        {2.1, 4, 0.948173356841199},          // scipy.stats.t.cdf(2.1, 4)
        {-3.2, 30, 0.0016193008559765687},    // scipy.stats.t.cdf(-3.2, 30)
        {0.7, 30, 0.7553397782501642},        // scipy.stats.t.cdf(0.7, 30)
        {2.1, 30, 0.9778787643688382},        // scipy.stats.t.cdf(2.1, 30)
        {-3.2, 1000, 0.0007087691521587763},  // scipy.stats.t.cdf(-3.2, 1000)
        {0.7, 1000, 0.7579549430036987},      // scipy.stats.t.cdf(0.7, 1000)
        {2.1, 1000, 0.982010562844609},       // scipy.stats.t.cdf(2.1, 1000)
        {-40, 4, 1.1670081613006347e-06},     // scipy.stats.t.cdf(-40, 4)
        {-1e6, 1, 3.1830988618368455e-07},    // scipy.stats.t.cdf(-1e6, 1)
        {1e-8, 30, 0.5000000039563218},       // scipy.stats.t.cdf(1e-8, 30)
    };
    for (const row& r : rows) {
        INFO("t = " << r.t << ", df = " << r.df);
        CHECK(student_t_cdf(r.t, r.df) == stats_close(r.expected));
    }
    CHECK(student_t_cdf(0, 3) == 0.5);
    CHECK(student_t_cdf(-std::numeric_limits<double>::infinity(), 3) == 0);
    CHECK(student_t_cdf(std::numeric_limits<double>::infinity(), 3) == 1);
    CHECK(std::isnan(student_t_cdf(stats_nan, 3)));
}

TEST_CASE("Student's t quantile matches scipy.stats.t.ppf", "[statistics]") {
    struct row {
        double p, df, expected;
    };
    const row rows[] = {
        {0.975, 1, 12.706204736432095},      // scipy.stats.t.ppf(0.975, 1)
        {0.025, 1, -12.706204736432102},     // scipy.stats.t.ppf(0.025, 1)
        {1e-6, 1, -318309.88618278794},      // scipy.stats.t.ppf(1e-06, 1)
        {0.975, 2.5, 3.5746548420118773},    // scipy.stats.t.ppf(0.975, 2.5)
        {0.025, 2.5, -3.574654842011878},    // scipy.stats.t.ppf(0.025, 2.5)
        {1e-6, 2.5, -220.17342917823692},    // scipy.stats.t.ppf(1e-06, 2.5)
        {0.975, 4, 2.7764451051977987},      // scipy.stats.t.ppf(0.975, 4)
        {0.025, 4, -2.7764451051977996},     // scipy.stats.t.ppf(0.025, 4)
        {1e-6, 4, -41.577854150453575},      // scipy.stats.t.ppf(1e-06, 4)
        {0.975, 30, 2.0422724563012373},     // scipy.stats.t.ppf(0.975, 30)
        {0.025, 30, -2.042272456301238},     // scipy.stats.t.ppf(0.025, 30)
        {1e-6, 30, -5.871117120418899},      // scipy.stats.t.ppf(1e-06, 30)
        {0.975, 1000, 1.9623390808264074},   // scipy.stats.t.ppf(0.975, 1000)
        {0.025, 1000, -1.9623390808264078},  // scipy.stats.t.ppf(0.025, 1000)
        {1e-6, 1000, -4.781608620455028},    // scipy.stats.t.ppf(1e-06, 1000)
    };
    for (const row& r : rows) {
        INFO("p = " << r.p << ", df = " << r.df);
        CHECK(student_t_quantile(r.p, r.df) == stats_close(r.expected));
    }
    CHECK(student_t_quantile(0.5, 7) == 0);
    // Near the centre, where scipy's t.ppf(0.6, 30) is 2e-9 off: the quantile inverts the cdf.
    for (double df : {1.0, 2.5, 4.0, 30.0, 1000.0})
        for (double p : {0.5000001, 0.6, 0.3, 0.999}) {
            INFO("p = " << p << ", df = " << df);
            CHECK(student_t_cdf(student_t_quantile(p, df), df) == Approx(p).epsilon(1e-13));
        }
}

TEST_CASE("beta quantile matches scipy.stats.beta.ppf", "[statistics]") {
    CHECK(beta_quantile(0.025, 1, 3) == stats_close(0.008403758659612636));   // scipy.stats.beta.ppf(0.025, 1, 3)
    CHECK(beta_quantile(0.975, 6, 8) == stats_close(0.6842223970859369));     // scipy.stats.beta.ppf(0.975, 6, 8)
    CHECK(beta_quantile(0.3, 0.5, 0.5) == stats_close(0.2061073738537634));   // scipy.stats.beta.ppf(0.3, 0.5, 0.5)
    CHECK(beta_quantile(0.5, 200, 300) == stats_close(0.3998665627141165));   // scipy.stats.beta.ppf(0.5, 200, 300)
    CHECK(beta_quantile(1e-10, 2, 5) == stats_close(2.581997786411184e-06));  // scipy.stats.beta.ppf(1e-10, 2, 5)
    CHECK(beta_quantile(0, 2, 5) == 0);
    CHECK(beta_quantile(1, 2, 5) == 1);
}

TEST_CASE("Clopper-Pearson intervals match scipy.stats.beta.ppf", "[statistics]") {
    struct row {
        int k, n;
        double low, high;
    };
    // low = scipy.stats.beta.ppf(0.025, k, n-k+1) (0 for k = 0), high = scipy.stats.beta.ppf(0.975, k+1, n-k)
    // (1 for k = n).
    const row rows[] = {
        {0, 3, 0.0, 0.7075982261787133},
        {3, 3, 0.2924017738212866, 1.0},
        {1, 3, 0.008403758659612636, 0.9057006759497539},
        {5, 12, 0.15165222980843013, 0.7233303143178942},
        {12, 12, 0.7353515306029488, 1.0},
        {0, 10, 0.0, 0.3084971078187608},
    };
    for (const row& r : rows) {
        INFO("k = " << r.k << ", n = " << r.n);
        const proportion_interval ci = clopper_pearson(r.k, r.n);
        CHECK(ci.low == stats_close(r.low));
        CHECK(ci.high == stats_close(r.high));
    }
    // 90 %: scipy.stats.beta.ppf(0.05, 5, 8), scipy.stats.beta.ppf(0.95, 6, 7)
    const proportion_interval ci90 = clopper_pearson(5, 12, 0.90);
    CHECK(ci90.low == stats_close(0.181024757242321));
    CHECK(ci90.high == stats_close(0.6847622092755479));
    CHECK_THROWS_AS(clopper_pearson(0, 0), std::invalid_argument);
    CHECK_THROWS_AS(clopper_pearson(-1, 3), std::invalid_argument);
    CHECK_THROWS_AS(clopper_pearson(4, 3), std::invalid_argument);
    CHECK_THROWS_AS(clopper_pearson(1, 3, 1.0), std::invalid_argument);
}

TEST_CASE("Fisher's exact test matches scipy.stats.fisher_exact", "[statistics]") {
    // scipy.stats.fisher_exact([[3, 0], [0, 3]]).pvalue
    CHECK(fisher_exact_two_sided(3, 3, 0, 3) == stats_close(0.10000000000000002));
    // scipy.stats.fisher_exact([[12, 0], [5, 7]]).pvalue
    CHECK(fisher_exact_two_sided(12, 12, 5, 12) == stats_close(0.004576659038901602));
    // scipy.stats.fisher_exact([[1, 2], [3, 0]]).pvalue
    CHECK(fisher_exact_two_sided(1, 3, 3, 3) == stats_close(0.4000000000000001));
    // scipy.stats.fisher_exact([[0, 10], [1, 9]]).pvalue
    CHECK(fisher_exact_two_sided(0, 10, 1, 10) == stats_close(1.0));
    // scipy.stats.fisher_exact([[7, 5], [2, 10]]).pvalue, and the same with the rows swapped
    CHECK(fisher_exact_two_sided(7, 12, 2, 12) == stats_close(0.08937945887737245));
    CHECK(fisher_exact_two_sided(2, 12, 7, 12) == stats_close(0.08937945887737245));
    // scipy.stats.fisher_exact([[0, 0], [1, 2]]).pvalue: an empty row
    CHECK(fisher_exact_two_sided(0, 0, 1, 3) == 1);
    CHECK_THROWS_AS(fisher_exact_two_sided(4, 3, 0, 3), std::invalid_argument);
    CHECK_THROWS_AS(fisher_exact_two_sided(0, 3, -1, 3), std::invalid_argument);
    CHECK_THROWS_AS(fisher_exact_two_sided(0, -1, 0, 3), std::invalid_argument);
}

TEST_CASE("fisher_smallest_p matches the minimum over every outcome", "[statistics]") {
    // min(scipy.stats.fisher_exact([[k1, n1-k1], [k2, n2-k2]]).pvalue for k1 in 0..n1 for k2 in 0..n2)
    CHECK(fisher_smallest_p(3, 3) == stats_close(0.1));
    CHECK(fisher_smallest_p(5, 5) == stats_close(0.007936507936507938));
    CHECK(fisher_smallest_p(10, 10) == stats_close(1.082508822446903e-05));
    CHECK(fisher_smallest_p(12, 12) == stats_close(7.39602301050679e-07));
    CHECK(fisher_smallest_p(3, 5) == stats_close(0.017857142857142856));
    CHECK(fisher_smallest_p(5, 3) == stats_close(0.017857142857142856));
}

TEST_CASE("Holm's adjustment follows its definition, with ties and NaN", "[statistics]") {
    // In Python, over the non-NaN p (m = 7), sorted: adj_(i) = max_{j<=i} min(1, (m - j) p_(j)).
    const std::vector<double> p = {0.01, 0.04, stats_nan, 0.03, 0.04, 0.005, 0.2, 0.6};
    const std::vector<double> expected = {0.06, 0.16, stats_nan, 0.15, 0.16, 0.035, 0.4, 0.6};
    const std::vector<double> adjusted = holm_adjust(p);
    REQUIRE(adjusted.size() == expected.size());
    for (std::size_t i = 0; i < p.size(); ++i) {
        INFO("i = " << i);
        if (std::isnan(expected[i]))
            CHECK(std::isnan(adjusted[i]));
        else
            CHECK(adjusted[i] == stats_close(expected[i]));
    }
    // Capped at 1: 2 * 0.6 = 1.2 -> 1, then max(1, 0.7) = 1.
    CHECK(holm_adjust({0.7, 0.6}) == std::vector<double>{1.0, 1.0});
    CHECK(holm_adjust({}).empty());
    CHECK(std::isnan(holm_adjust({stats_nan})[0]));
    CHECK_THROWS_AS(holm_adjust({0.5, 1.5}), std::invalid_argument);
}

TEST_CASE("one-sample t matches scipy.stats.ttest_1samp", "[statistics]") {
    const std::vector<double> x = {0.12, -0.03, 0.25, 0.08, 0.15};
    const mean_interval r = one_sample_t(x);
    CHECK(r.n == 5);
    CHECK(r.df == 4);
    CHECK(r.mean == stats_close(0.11399999999999999));  // numpy.mean(x)
    CHECK(r.sd == stats_close(0.10212737145349428));    // numpy.std(x, ddof=1)
    // mean -/+ scipy.stats.t.ppf(0.975, 4) * numpy.std(x, ddof=1) / sqrt(5)
    CHECK(r.low == stats_close(-0.012807880364986923));
    CHECK(r.high == stats_close(0.2408078803649869));
    CHECK(r.p == stats_close(0.06705136216230766));  // scipy.stats.ttest_1samp(x, 0).pvalue
    // 90 %: mean -/+ t(0.95, 4) sd/sqrt(5), t(0.95, 4) = 2.1318467863266495 by mpmath.findroot on the 60-digit
    // cdf (scipy.stats.t.ppf(0.95, 4) is 2.3e-9 off).
    const mean_interval r90 = one_sample_t(x, 0.90);
    CHECK(r90.low == stats_close(0.01663269685004902));
    CHECK(r90.high == stats_close(0.21136730314995095));
    // scipy.stats.ttest_1samp([-1.5, -2.25, -0.5], 0).pvalue
    CHECK(one_sample_t({-1.5, -2.25, -0.5}).p == stats_close(0.10773140216148738));
}

TEST_CASE("one-sample t without spread or without an interval", "[statistics]") {
    const mean_interval constant = one_sample_t({2, 2, 2});
    CHECK(constant.p == 0);
    CHECK(constant.low == 2);
    CHECK(constant.high == 2);
    CHECK(one_sample_t({0, 0}).p == 1);
    const mean_interval single = one_sample_t({0.5});
    CHECK(single.n == 1);
    CHECK(single.mean == 0.5);
    CHECK(single.low == 0.5);
    CHECK(single.high == 0.5);
    CHECK(std::isnan(single.p));
    const mean_interval none = one_sample_t({});
    CHECK(none.n == 0);
    CHECK(std::isnan(none.mean));
    CHECK(std::isnan(none.p));
    CHECK_THROWS_AS(one_sample_t({1, 2}, 0), std::invalid_argument);
}

TEST_CASE("one-sided t-tests match scipy.stats.ttest_1samp's alternatives", "[statistics]") {
    const std::vector<double> x = {0.12, -0.03, 0.25, 0.08, 0.15};
    // scipy.stats.ttest_1samp(x, 0.2, alternative='less').pvalue
    CHECK(one_sided_p_below(x, 0.2) == stats_close(0.06641300535919124));
    // scipy.stats.ttest_1samp(x, 0.2, alternative='greater').pvalue
    CHECK(one_sided_p_above(x, 0.2) == stats_close(0.9335869946408087));
    // scipy.stats.ttest_1samp(x, -0.05, alternative='greater').pvalue
    CHECK(one_sided_p_above(x, -0.05) == stats_close(0.011473106293860337));
    // scipy.stats.ttest_1samp(x, -0.05, alternative='less').pvalue
    CHECK(one_sided_p_below(x, -0.05) == stats_close(0.9885268937061397));
    CHECK(one_sided_p_above({1, 1, 1}, 0.5) == 0);
    CHECK(one_sided_p_below({1, 1, 1}, 0.5) == 1);
    CHECK(std::isnan(one_sided_p_above({1}, 0.5)));
}

TEST_CASE("Welch's t matches scipy.stats.ttest_ind(equal_var=False)", "[statistics]") {
    const std::vector<double> a = {0.81, 0.79, 0.84, 0.80}, b = {0.75, 0.78, 0.74, 0.77, 0.73};
    const mean_interval r = welch_t(a, b);
    CHECK(r.n == 9);
    CHECK(r.mean == stats_close(0.05600000000000005));  // numpy.mean(a) - numpy.mean(b)
    // scipy.stats._stats_py._unequal_var_ttest_denom(numpy.var(a, ddof=1), 4, numpy.var(b, ddof=1), 5): df, denom
    CHECK(r.df == stats_close(6.43181014133846));
    CHECK(r.sd == stats_close(0.014236104336041742));
    CHECK(r.p == stats_close(0.006686900908260435));  // scipy.stats.ttest_ind(a, b, equal_var=False).pvalue
    // mean -/+ t(0.975, df) denom, t(0.975, df) = 2.4076368621944826 by mpmath.findroot on the 60-digit cdf
    // (scipy.stats.t.ppf(0.975, df) is 5e-10 off).
    CHECK(r.low == stats_close(0.02172463042649924));
    CHECK(r.high == stats_close(0.09027536957350085));
    const std::vector<double> b2 = {0.5, 0.9, 0.1};
    const mean_interval r2 = welch_t(a, b2);
    CHECK(r2.df == stats_close(2.0087531621806676));  // as above, with b2
    CHECK(r2.p == stats_close(0.31147070347463274));  // scipy.stats.ttest_ind(a, b2, equal_var=False).pvalue
    // Welch's t is antisymmetric in its samples.
    const mean_interval swapped = welch_t(b, a);
    CHECK(swapped.mean == stats_close(-r.mean));
    CHECK(swapped.low == stats_close(-r.high));
    CHECK(swapped.p == stats_close(r.p));

    const mean_interval short_side = welch_t(a, {0.7});
    CHECK(short_side.low == short_side.mean);
    CHECK(short_side.high == short_side.mean);
    CHECK(std::isnan(short_side.p));
    const mean_interval flat = welch_t({1, 1}, {0.5, 0.5, 0.5});
    CHECK(flat.mean == 0.5);
    CHECK(flat.low == 0.5);
    CHECK(flat.p == 0);
    CHECK(welch_t({1, 1}, {1, 1}).p == 1);
}

TEST_CASE("Pearson's correlation matches scipy.stats.pearsonr", "[statistics]") {
    const std::vector<double> a = {1.0, 2.0, 3.0, 4.5, 5.0}, b = {2.1, 1.9, 4.2, 3.3, 6.0};
    // scipy.stats.pearsonr(a, b).statistic
    CHECK(pearson_correlation(a, b) == stats_close(0.8088968780333098));
    std::vector<double> negated;
    for (double v : b) negated.push_back(-v);
    CHECK(pearson_correlation(a, negated) == stats_close(-0.8088968780333098));
    CHECK(pearson_correlation(a, a) == Approx(1).epsilon(1e-15));
    CHECK(std::isnan(pearson_correlation({1, 2}, {3, 4})));
    CHECK(std::isnan(pearson_correlation({1, 2, 3}, {4, 4, 4})));
    CHECK_THROWS_AS(pearson_correlation({1, 2, 3}, {1, 2}), std::invalid_argument);
}

TEST_CASE("seeds_needed follows its definition", "[statistics]") {
    // In Python: the first n >= 2 with scipy.stats.t.ppf(1 - alpha/2, n-1) * sd / sqrt(n) < margin; the bound
    // is 0.0557 at n = 4 and 0.0435 at n = 5 for (0.035, 0.05).
    CHECK(seeds_needed(0.035, 0.05) == 5);
    CHECK(seeds_needed(0.035, 0.05, 0.05 / 6) == 8);  // 0.0511 at 7, 0.0450 at 8
    CHECK(seeds_needed(0.035, 0.01) == 50);           // 0.010053 at 49, 0.009947 at 50
    CHECK(seeds_needed(0.1, 0.05) == 18);             // 0.05142 at 17, 0.04973 at 18
    CHECK(seeds_needed(1.0, 0.01, 0.05, 50) == 51);
    CHECK(seeds_needed(0, 0.01) == 2);
    CHECK_THROWS_AS(seeds_needed(0.035, 0), std::invalid_argument);
    CHECK_THROWS_AS(seeds_needed(-1, 0.05), std::invalid_argument);
}

TEST_CASE("statistics reject invalid arguments", "[statistics]") {
    CHECK_THROWS_AS(regularized_incomplete_beta(0, 1, 0.5), std::invalid_argument);
    CHECK_THROWS_AS(regularized_incomplete_beta(1, -2, 0.5), std::invalid_argument);
    CHECK_THROWS_AS(regularized_incomplete_beta(1, 2, 1.5), std::invalid_argument);
    CHECK_THROWS_AS(regularized_incomplete_beta(1, 2, stats_nan), std::invalid_argument);
    CHECK_THROWS_AS(student_t_cdf(1, 0), std::invalid_argument);
    CHECK_THROWS_AS(student_t_quantile(0, 3), std::invalid_argument);
    CHECK_THROWS_AS(student_t_quantile(1, 3), std::invalid_argument);
    CHECK_THROWS_AS(student_t_quantile(0.5, -1), std::invalid_argument);
    CHECK_THROWS_AS(beta_quantile(1.5, 2, 3), std::invalid_argument);
    CHECK_THROWS_AS(beta_quantile(0.5, 0, 3), std::invalid_argument);
    CHECK_THROWS_AS(welch_t({1, 2}, {3, 4}, 1.5), std::invalid_argument);
}
