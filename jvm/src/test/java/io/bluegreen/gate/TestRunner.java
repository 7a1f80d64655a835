package io.bluegreen.gate;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A tiny test runner (no JUnit offline): every suite registers named tests; the runner runs them
 * in order, prints one line per test and closes with exactly {@code N passed, N failed}. Exit code 1
 * on any failure. Arguments filter tests by substring of their names.
 */
public final class TestRunner {
    /** A test body. */
    @FunctionalInterface
    public interface Body {
        void run() throws Exception;
    }

    private static final class Case {
        final String name;
        final Body body;

        Case(String name, Body body) {
            this.name = name;
            this.body = body;
        }
    }

    private static final List<Case> CASES = new ArrayList<>();

    /** Registers a test. */
    public static void test(String name, Body body) {
        CASES.add(new Case(name, body));
    }

    public static void main(String[] args) {
        ProtocolVectorsTest.register();
        WireNamesTest.register();
        ForkedJobBenchTest.register();
        TransitionsTest.register();
        JsonTest.register();
        GateProcessFunctionTest.register();
        SidecarStateSourceTest.register();
        HandoverJobTest.register();
        io.bluegreen.gate.sink.SinkIsolationTest.register();
        int passed = 0;
        int failed = 0;
        List<String> failures = new ArrayList<>();
        long start = System.nanoTime();
        for (Case c : CASES) {
            if (args.length > 0) {
                boolean match = false;
                for (String a : args) {
                    match |= c.name.toLowerCase().contains(a.toLowerCase());
                }
                if (!match) {
                    continue;
                }
            }
            long t0 = System.nanoTime();
            try {
                c.body.run();
                passed++;
                long ms = (System.nanoTime() - t0) / 1_000_000;
                if (ms >= 50 || !c.name.startsWith("vector")) {
                    System.out.println("ok   " + c.name + " (" + ms + " ms)");
                }
            } catch (Throwable e) {
                failed++;
                failures.add(c.name);
                StringWriter sw = new StringWriter();
                e.printStackTrace(new PrintWriter(sw));
                System.out.println("FAIL " + c.name + "\n" + sw);
            }
        }
        System.out.println("java tests took " + (System.nanoTime() - start) / 1_000_000 + " ms");
        for (String f : failures) {
            System.out.println("failed: " + f);
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.out.flush();
        // Flink and HTTP threads may linger; the verdict is the exit code.
        Runtime.getRuntime().halt(failed == 0 && passed > 0 ? 0 : 1);
    }

    // ---- assertions -----------------------------------------------------------------------

    public static void check(boolean cond, String message) {
        if (!cond) {
            throw new AssertionError(message);
        }
    }

    public static void checkEq(Object expected, Object actual, String what) {
        if (!Objects.equals(expected, actual)) {
            throw new AssertionError(what + ": expected <" + expected + "> but was <" + actual + ">");
        }
    }

    /** Runs {@code body} and returns what it throws; fails if it returns normally or throws another type. */
    public static <E extends Throwable> E expectThrows(Class<E> type, Body body) {
        try {
            body.run();
        } catch (Throwable t) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
            throw new AssertionError("expected " + type.getSimpleName() + " but got " + t, t);
        }
        throw new AssertionError("expected " + type.getSimpleName() + " but nothing was thrown");
    }

    /** The first cause in {@code t}'s chain of type {@code type}, or null. */
    public static <E extends Throwable> E findCause(Throwable t, Class<E> type) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (type.isInstance(c)) {
                return type.cast(c);
            }
        }
        return null;
    }
}
