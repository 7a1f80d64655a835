package io.bluegreen.gate;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Job throughput with and without the gate, one fresh JVM per measurement (as JMH forks), for
 * docs/performance.md (run: {@code mvn -B -q -pl jvm test-compile exec:exec -Dexec.executable=java -Dexec.classpathScope=test
 * -Dexec.args="-Xmx1g -XX:+UseSerialGC -cp %classpath io.bluegreen.gate.ForkedJobBench [PAIRS [RECORDS [ROUNDS [VARIANTS [PIPELINES]]]]]"}).
 * JMH could fork the JVMs, but not take what this measures: the CPU time of a Flink job's task
 * threads, per job run, paired ABBA with the baseline's.
 *
 * <p>Why forks: in one JVM the jobs of every variant share Flink's classes, so the JIT's profile
 * and inlining of the operator chain depend on which variants ran before; and two JVMs of the
 * same variant differ by up to ±15 % in CPU per record (the JIT's decisions differ). Each
 * measurement here is its own JVM that runs one variant of one pipeline: a warmup round, then
 * ROUNDS rounds, reporting the median CPU time of the task threads per record. Baseline and
 * variant alternate in pairs, in ABBA order (A B, B A, ...), so that a drift of the machine's
 * load hits both alike. A pair's ratio is CPU(no gate) / CPU(variant) (= throughput with /
 * without). The result is the median of the pairs' ratios with a distribution-free 95 %
 * confidence interval for that median (order statistics of the binomial), and the ratio of the
 * variants' medians.
 */
public final class ForkedJobBench {
    private ForkedJobBench() {}

    /** The pipelines; variant 0 of each is the baseline (no gate). */
    private static final String[] PIPELINES = {"trivial", "realistic"};

    public static void main(String[] args) {
        GateBench.haltOnFailure(() -> {
            if (args.length > 0 && args[0].equals("--child")) {
                child(args);
            } else {
                parent(args);
            }
        });
    }

    /** {@code --child PIPELINE VARIANT RECORDS ROUNDS}: prints "cpu-ns-per-record N" and exits. */
    static void child(String[] args) throws Exception {
        int pipeline = Integer.parseInt(args[1]);
        int variant = Integer.parseInt(args[2]);
        long records = Long.parseLong(args[3]);
        int rounds = Integer.parseInt(args[4]);
        String ch = "bench-job";
        ManualStateSource.channel(ch).publish(
                CoordinationState.of(0, Color.BLUE, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 0));
        LocalFlink flink = LocalFlink.shared();
        Path dir = Files.createTempDirectory("bluegreen-forked-bench-");
        double[] cpu = new double[rounds];
        try {
            for (int r = 0; r <= rounds; r++) { // round 0 warms up
                StreamExecutionEnvironment env = HandoverJob.env(1);
                String key = "forked-" + r;
                GateBench.CPU_NS.put(key, new java.util.concurrent.atomic.AtomicLong());
                if (pipeline == 0) {
                    GateBench.trivial(env, records, variant, ch, key);
                } else {
                    GateBench.Realistic.build(env, records, variant, ch, dir.resolve("run-" + r), key);
                }
                flink.runMs(env, key, 1_800_000);
                if (r > 0) {
                    cpu[r - 1] = GateBench.CPU_NS.get(key).get() / (double) records;
                }
                GateBench.deleteTree(dir);
                Files.createDirectories(dir);
            }
        } finally {
            GateBench.deleteTree(dir);
        }
        System.out.printf("cpu-ns-per-record %.3f%n", GateBench.median(cpu));
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    /**
     * {@code [PAIRS [RECORDS [ROUNDS [VARIANTS [PIPELINES]]]]]}: RECORDS for the trivial pipeline, a
     * 30th of it for the realistic one; VARIANTS a comma-separated list of variant indexes compared
     * with the baseline (default {@code 2}, the gate in the sink; {@code 2,1} adds the gate
     * operator), each in the pipelines that have it; PIPELINES {@code a}, {@code b} or {@code a,b}
     * (the default).
     */
    static void parent(String[] args) throws Exception {
        int pairs = args.length > 0 ? Integer.parseInt(args[0]) : 15;
        long records = args.length > 1 ? Long.parseLong(args[1]) : 10_000_000L;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        int[] compared = Arrays.stream((args.length > 3 ? args[3] : "2").split(",")).mapToInt(Integer::parseInt).toArray();
        List<String> only = Arrays.asList((args.length > 4 ? args[4] : "a,b").split(","));
        System.out.printf("job throughput in forked JVMs (parallelism 1; %d ABBA pairs per comparison; per JVM a warmup round,"
                + " then the median of %d rounds of CPU time of the task threads per record):%n", pairs, rounds);
        for (int p = 0; p < PIPELINES.length; p++) {
            String label = p == 0 ? "a" : "b";
            if (!only.contains(label)) {
                continue;
            }
            long n = p == 0 ? records : records / 30;
            String[] names = p == 0 ? GateBench.TRIVIAL_VARIANTS : GateBench.REALISTIC_VARIANTS;
            System.out.printf("  (%s) %s, %d records%n", label, PIPELINES[p], n);
            for (int variant : compared) {
                if (variant <= 0 || variant >= names.length) {
                    continue; // not a variant of this pipeline
                }
                double[] base = new double[pairs];
                double[] with = new double[pairs];
                double[] ratio = new double[pairs];
                for (int i = 0; i < pairs; i++) {
                    boolean baseFirst = i % 2 == 0;
                    double first = fork(p, baseFirst ? 0 : variant, n, rounds);
                    double second = fork(p, baseFirst ? variant : 0, n, rounds);
                    base[i] = baseFirst ? first : second;
                    with[i] = baseFirst ? second : first;
                    ratio[i] = base[i] / with[i];
                }
                double[] ci = medianInterval(ratio);
                System.out.printf("    %-45s %6.1f ns/record vs no gate %6.1f (medians): ratio of medians %.3f;"
                        + " median pair ratio %.3f, 95%% CI [%.3f, %.3f]; pairs %s%n",
                        names[variant], GateBench.median(with), GateBench.median(base), GateBench.median(base) / GateBench.median(with),
                        GateBench.median(ratio), ci[0], ci[1], GateBench.fmt(ratio));
                System.out.flush();
            }
        }
    }

    /** Runs one child JVM with this JVM's options and class path; returns its CPU ns per record. */
    static double fork(int pipeline, int variant, long records, int rounds) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(ForkedJobBench.class.getName());
        cmd.addAll(Arrays.asList("--child", Integer.toString(pipeline), Integer.toString(variant), Long.toString(records),
                Integer.toString(rounds)));
        Process child = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String result = null;
        StringBuilder log = new StringBuilder();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = out.readLine()) != null; ) {
                if (line.startsWith("cpu-ns-per-record ")) {
                    result = line.substring("cpu-ns-per-record ".length());
                } else if (log.length() < 20_000) {
                    log.append(line).append('\n');
                }
            }
        }
        int rc = child.waitFor();
        if (rc != 0 || result == null) {
            throw new IllegalStateException("forked bench JVM (pipeline " + pipeline + ", variant " + variant + ") exited with " + rc
                    + " and no result:\n" + log);
        }
        return Double.parseDouble(result);
    }

    /**
     * A distribution-free 95 % confidence interval for the median of {@code xs}: the order
     * statistics x(r) and x(n+1-r) (1-based) with the largest r such that
     * P(Binomial(n, 1/2) <= r-1) <= 2.5 % (n = 15: x(4) and x(12)). With fewer than 6 values the
     * whole range covers less than 95 % and is returned.
     */
    static double[] medianInterval(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        int n = s.length;
        int r = 1;
        double atMost = 0; // P(B <= r-1), for the next r
        for (int i = 0; i < (n + 1) / 2; i++) {
            atMost += binomial(n, i) / Math.pow(2, n);
            if (atMost > 0.025) {
                break;
            }
            r = i + 1;
        }
        return new double[] {s[r - 1], s[n - r]};
    }

    private static double binomial(int n, int k) {
        double c = 1;
        for (int i = 1; i <= k; i++) {
            c = c * (n - k + i) / i;
        }
        return c;
    }
}
