package io.bluegreen.examples;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Runs the example job on local MiniClusters: for each topology a blue (v1) and a green (v2) job
 * side by side over the same bounded topic, both gated by a static state "TRANSITIONING to GREEN,
 * W set", into {@code OUT/<topology>}. Writes {@code OUT/run.txt} (the parameters the ledger
 * needs) and fails if a topology committed no part file. The Rust ledger test
 * ({@code local/tests/file_ledger.rs}) judges the output.
 *
 * <p>Usage: {@code SelfTest OUT_DIR}
 */
public final class SelfTest {
    static final int SPLITS = 4;
    static final int RECORDS_PER_SPLIT = 400;
    static final int KEYS_PER_SPLIT = 16;

    private SelfTest() {}

    public static void main(String[] argv) throws Exception {
        if (argv.length != 1) {
            System.err.println("usage: SelfTest OUT_DIR");
            System.exit(2);
        }
        Path out = Path.of(argv[0]);
        Files.createDirectories(out);
        long t0 = System.currentTimeMillis();
        long w = t0 + 1000;
        for (String topology : List.of("keyed", "chained", "two-sinks")) {
            long started = System.currentTimeMillis();
            JobClient blue = submit(out.resolve(topology), topology, "BLUE", "v1", t0, w);
            JobClient green = submit(out.resolve(topology), topology, "GREEN", "v2", t0, w);
            blue.getJobExecutionResult().get();
            green.getJobExecutionResult().get();
            System.out.println("SelfTest: " + topology + " done in " + (System.currentTimeMillis() - started) + " ms");
        }
        for (String dir : List.of("keyed", "chained", "two-sinks/a", "two-sinks/b")) {
            long committed = committedFiles(out.resolve(dir));
            if (committed == 0) {
                System.err.println("SelfTest: no committed part file under " + out.resolve(dir));
                System.exit(1);
            }
        }
        Files.writeString(out.resolve("run.txt"), String.join("\n",
                "w=" + w, "splits=" + SPLITS, "records-per-split=" + RECORDS_PER_SPLIT,
                "keys-per-split=" + KEYS_PER_SPLIT, ""), StandardCharsets.UTF_8);
        System.out.println("SelfTest: output in " + out + " (W = " + w + ")");
    }

    private static JobClient submit(Path dir, String topology, String color, String version, long t0, long w)
            throws Exception {
        List<String> args = new ArrayList<>(List.of("--output", dir.toString(), "--topology", topology,
                "--color", color, "--version", version, "--state-source", "static-handover", "--w", Long.toString(w),
                "--splits", Integer.toString(SPLITS), "--records-per-split", Integer.toString(RECORDS_PER_SPLIT),
                "--keys-per-split", Integer.toString(KEYS_PER_SPLIT), "--rate", "200", "--t0", Long.toString(t0),
                "--jitter-ms", "300", "--idle-split", "1", "--idle-active-ms", "500", "--idle-cycle-ms", "1000",
                "--idleness-ms", "200", "--checkpoint-interval-ms", "300", "--parallelism", "2"));
        Map<String, String> parsed = ExampleJob.parse(args.toArray(new String[0]));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        String name = ExampleJob.build(env, parsed);
        return env.executeAsync(name);
    }

    private static long committedFiles(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return 0;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile)
                    .filter(p -> !p.getFileName().toString().startsWith("."))
                    .count();
        }
    }
}
