package io.bluegreen.gate;

/** Test access to the package-private parts of {@link GatedSink.State}, for tests in other packages. */
public final class GatedSinkAccess {
    private GatedSinkAccess() {}

    public static Object inner(GatedSink.State s) {
        if (s.kind != GatedSink.State.INNER) {
            throw new AssertionError("not a wrapped sink's entry: kind " + s.kind);
        }
        return s.inner;
    }

    public static GatedSink.State maxPassed(long max) {
        return GatedSink.State.maxPassed(max);
    }

    public static long maxPassedOf(GatedSink.State s) {
        if (s.kind != GatedSink.State.MAX_PASSED) {
            throw new AssertionError("not a max-passed entry: kind " + s.kind);
        }
        return s.maxPassed;
    }

    public static GatedSink.State held(byte[] encoded) {
        return GatedSink.State.held(encoded);
    }

    public static byte[] heldOf(GatedSink.State s) {
        if (s.kind != GatedSink.State.HELD) {
            throw new AssertionError("not a held record: kind " + s.kind);
        }
        return s.held;
    }
}
