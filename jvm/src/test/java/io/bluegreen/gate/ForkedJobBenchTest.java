package io.bluegreen.gate;

import static io.bluegreen.gate.TestRunner.checkEq;
import static io.bluegreen.gate.TestRunner.test;

/** The statistics of {@link ForkedJobBench}: the confidence interval of a median. */
final class ForkedJobBenchTest {
    private ForkedJobBenchTest() {}

    static void register() {
        // Known ranks of the distribution-free 95 % interval (1-based): n=10 → x(2), x(9);
        // n=15 → x(4), x(12); n=20 → x(6), x(15); n=100 → x(40), x(61); n<=6 → the whole range.
        int[][] ranks = {{5, 1, 5}, {6, 1, 6}, {10, 2, 9}, {15, 4, 12}, {20, 6, 15}, {100, 40, 61}};
        for (int[] r : ranks) {
            int n = r[0];
            test("forked bench: the 95% interval of the median of " + n + " values is x(" + r[1] + ")..x(" + r[2] + ")", () -> {
                double[] xs = new double[n];
                for (int i = 0; i < n; i++) {
                    xs[i] = (i * 7919L) % n + 1; // 1..n, shuffled
                }
                double[] ci = ForkedJobBench.medianInterval(xs);
                checkEq((double) r[1], ci[0], "lower bound");
                checkEq((double) r[2], ci[1], "upper bound");
            });
        }
    }
}
