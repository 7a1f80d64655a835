package io.bluegreen.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The statistics of {@link ForkedJobBench}: the confidence interval of a median. */
final class ForkedJobBenchTest {
    /**
     * Known ranks of the distribution-free 95 % interval (1-based): n=10 → x(2), x(9);
     * n=15 → x(4), x(12); n=20 → x(6), x(15); n=100 → x(40), x(61); n<=6 → the whole range.
     */
    static Stream<Arguments> ranks() {
        return Stream.of(Arguments.of(5, 1, 5), Arguments.of(6, 1, 6), Arguments.of(10, 2, 9), Arguments.of(15, 4, 12),
                Arguments.of(20, 6, 15), Arguments.of(100, 40, 61));
    }

    @ParameterizedTest(name = "forked bench: the 95% interval of the median of {0} values is x({1})..x({2})")
    @MethodSource("ranks")
    void medianInterval(int n, int lower, int upper) {
        double[] xs = new double[n];
        for (int i = 0; i < n; i++) {
            xs[i] = (i * 7919L) % n + 1; // 1..n, shuffled
        }
        double[] ci = ForkedJobBench.medianInterval(xs);
        assertEquals((double) lower, ci[0], "lower bound");
        assertEquals((double) upper, ci[1], "upper bound");
    }
}
