package io.bluegreen.gate;

import java.util.Arrays;

/**
 * Figures for docs/performance.md, "JNI shim and sidecar" (run, after
 * {@code cargo build --release -p bluegreen-gate-jni}: {@code mvn -B -q -pl jvm test-compile exec:exec
 * -Dexec.executable=java -Dexec.classpathScope=test -Dexec.args="-Xmx1g -XX:+UseSerialGC
 * -Dbluegreen.gate.jni.library=$PWD/target/release/libbluegreen_gate_jni.so -cp %classpath io.bluegreen.gate.JniBench [RECORDS [ROUNDS]]"}).
 *
 * <ol>
 *   <li>ns per record: the Java {@link Gate#decide} vs one JNI call per record ({@link JniGate#decide})
 *       vs one JNI call per 1024 records ({@link JniGate#decideBatch}), same event times, same state
 *       (outgoing color, W set in the middle of the times), variants interleaved, median of rounds.
 *   <li>update latency through {@link JniStateSource}: native offer (W raised) → the Java gate has
 *       applied it (p50/p99 over many updates).
 * </ol>
 */
public final class JniBench {
    private JniBench() {}

    static long sink;

    public static void main(String[] args) throws Exception {
        int records = args.length > 0 ? Integer.parseInt(args[0]) : 4_000_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 15;
        long w = records / 2;
        long[] times = new long[records];
        java.util.Random random = new java.util.Random(42);
        for (int i = 0; i < records; i++) {
            times[i] = i + random.nextInt(64);
        }
        CoordinationState set = CoordinationState.of(1, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, w, 0);
        String name = "jni-bench";
        Gate javaGate = new Gate(Color.BLUE, "bench");
        javaGate.onConfigMap(set.toData());
        try (JniGate nativeGate = JniGate.open(JniStateSource.manual(name), Color.BLUE)) {
            // The manual native state lives while a handle (the gate's) holds it.
            if (!JniStateSource.offer(name, set.toData()) || nativeGate.decide(w) != Decision.PASS || javaGate.decide(w + 1) != Decision.DROP) {
                throw new AssertionError("the gates did not take the state");
            }
            byte[] out = new byte[1024];
            double[][] ns = new double[3][rounds];
            for (int r = -3; r < rounds; r++) { // three warm-up rounds
                long t0 = System.nanoTime();
                long s = 0;
                for (long t : times) {
                    s += javaGate.decide(t).ordinal();
                }
                long t1 = System.nanoTime();
                for (long t : times) {
                    s += nativeGate.decide(t).ordinal();
                }
                long t2 = System.nanoTime();
                long[] batch = new long[1024];
                for (int i = 0; i < records; i += 1024) {
                    int n = Math.min(1024, records - i);
                    System.arraycopy(times, i, batch, 0, n);
                    nativeGate.decideBatch(batch, n, out);
                    s += out[n - 1];
                }
                long t3 = System.nanoTime();
                sink += s;
                if (r >= 0) {
                    ns[0][r] = (t1 - t0) / (double) records;
                    ns[1][r] = (t2 - t1) / (double) records;
                    ns[2][r] = (t3 - t2) / (double) records;
                }
            }
            double java = median(ns[0]);
            double perCall = median(ns[1]);
            double batch = median(ns[2]);
            System.out.printf("records %d, rounds %d (median; batch includes copying the times into the 1024 array)%n", records, rounds);
            System.out.printf("java Gate.decide            %7.2f ns/record%n", java);
            System.out.printf("JNI decide (1 call/record)  %7.2f ns/record  (%.1fx java)%n", perCall, perCall / java);
            System.out.printf("JNI decideBatch (1024)      %7.2f ns/record  (%.1fx java)%n", batch, batch / java);
        }
        latency(name + "-latency", args.length > 2 ? Integer.parseInt(args[2]) : 2_000);
        System.out.println("sink " + sink);
    }

    /** Native offer → Java gate applied, through JniStateSource's blocking native wait. */
    static void latency(String name, int updates) throws Exception {
        Gate gate = new Gate(Color.BLUE, "bench-latency");
        double[] micros = new double[updates];
        try (StateSource.Subscription sub = JniStateSource.manual(name).subscribe("bench", gate)) {
            JniStateSource.offer(name, CoordinationState.of(1, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WAITING_FOR_WATERMARK, 0, 0).toData());
            Gate.Snapshot seen = gate.awaitChange(gate.latest(), System.nanoTime() + 5_000_000_000L);
            for (int i = 0; i < updates; i++) {
                CoordinationState next = CoordinationState.of(1, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WAITING_FOR_WATERMARK, i + 1, 0);
                long t0 = System.nanoTime();
                JniStateSource.offer(name, next.toData());
                Gate.Snapshot now = gate.awaitChange(seen, t0 + 5_000_000_000L);
                long t1 = System.nanoTime();
                if (now == seen || now.state.watermarkToggleValue() != i + 1) {
                    throw new AssertionError("update " + (i + 1) + " not applied: " + now.state);
                }
                seen = now;
                micros[i] = (t1 - t0) / 1_000.0;
            }
        }
        Arrays.sort(micros);
        System.out.printf("JniStateSource update -> Java gate applied: p50 %.1f us, p99 %.1f us, max %.1f us (%d updates; includes the native offer)%n",
                micros[updates / 2], micros[(int) (updates * 0.99)], micros[updates - 1], updates);
    }

    static double median(double[] values) {
        double[] copy = values.clone();
        Arrays.sort(copy);
        return copy[copy.length / 2];
    }
}
