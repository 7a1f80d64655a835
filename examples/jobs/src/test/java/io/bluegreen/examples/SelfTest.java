package io.bluegreen.examples;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.stream.Stream;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * Runs the example job on local MiniClusters, every job gated by a static state "TRANSITIONING to
 * GREEN, W set":
 * <ul>
 *   <li>for each topology, a blue (v1) and a green (v2) job side by side over the same bounded
 *       topic, both from the start, into {@code OUT/<topology>};
 *   <li>{@code OUT/savepoint}: a real upgrade. Blue (v1, keyed) starts, a savepoint is taken
 *       while it runs, green (v2) starts from that savepoint (ignoring blue's sink state, i.e.
 *       allowNonRestoredState) while blue goes on. W lies above every record blue read before the
 *       savepoint (checked: the source is paced), so green must continue blue's source positions
 *       and running counts exactly.
 * </ul>
 * Writes {@code OUT/run.txt} (the parameters the ledger needs) and fails if an output committed
 * no part file. The Rust ledger test ({@code local-flink/tests/file_ledger.rs}) judges the output.
 *
 * <p>Usage: {@code SelfTest OUT_DIR}
 */
public final class SelfTest {
    static final int SPLITS = 4;
    static final int RECORDS_PER_SPLIT = 400;
    static final int KEYS_PER_SPLIT = 16;
    static final int SAVEPOINT_RECORDS_PER_SPLIT = 2000;
    static final long JITTER_MS = 300;

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
        // The chained topology must be one vertex: source, map, gate and sink chained together.
        for (String topology : List.of("keyed", "chained")) {
            StreamExecutionEnvironment probe = StreamExecutionEnvironment.getExecutionEnvironment();
            ExampleJob.build(probe, ExampleJob.parse(new String[] {"--output", out.toString(), "--topology", topology,
                    "--color", "BLUE", "--parallelism", "2"}));
            List<String> vertices = new ArrayList<>();
            probe.getStreamGraph().getJobGraph().getVertices().forEach(v -> vertices.add(v.getName()));
            System.out.println("SelfTest: " + topology + " has " + vertices.size() + " vertices: " + vertices);
            if (topology.equals("chained") != (vertices.size() == 1)) {
                System.err.println("SelfTest: the " + topology + " topology has " + vertices.size() + " vertices");
                System.exit(1);
            }
        }
        for (String topology : List.of("keyed", "chained", "two-sinks")) {
            long started = System.currentTimeMillis();
            JobClient blue = submit(out.resolve(topology), topology, "BLUE", "v1", t0, w);
            JobClient green = submit(out.resolve(topology), topology, "GREEN", "v2", t0, w);
            blue.getJobExecutionResult().get();
            green.getJobExecutionResult().get();
            System.out.println("SelfTest: " + topology + " done in " + (System.currentTimeMillis() - started) + " ms");
        }
        long savepointW = savepointUpgrade(out.resolve("savepoint"));
        for (String dir : List.of("keyed", "chained", "two-sinks/a", "two-sinks/b", "savepoint")) {
            long committed = committedFiles(out.resolve(dir));
            if (committed == 0) {
                System.err.println("SelfTest: no committed part file under " + out.resolve(dir));
                System.exit(1);
            }
        }
        Files.writeString(out.resolve("run.txt"), String.join("\n",
                "w=" + w, "splits=" + SPLITS, "records-per-split=" + RECORDS_PER_SPLIT,
                "keys-per-split=" + KEYS_PER_SPLIT, "savepoint-w=" + savepointW,
                "savepoint-records-per-split=" + SAVEPOINT_RECORDS_PER_SPLIT, ""), StandardCharsets.UTF_8);
        System.out.println("SelfTest: output in " + out + " (W = " + w + ")");
    }

    /** Blue, a savepoint of blue, green from it; returns W. */
    private static long savepointUpgrade(Path dir) throws Exception {
        long started = System.currentTimeMillis();
        long t0 = started + 2000;
        long w = t0 + 8000;
        List<String> common = List.of("--records-per-split", Integer.toString(SAVEPOINT_RECORDS_PER_SPLIT));
        JobClient blue = submit(dir, "keyed", "BLUE", "v1", t0, w, common, new Configuration());
        String savepoint = null;
        while (savepoint == null) {
            try {
                savepoint = blue.triggerSavepoint(dir.getParent().resolve("savepoints").toUri().toString(),
                        SavepointFormatType.CANONICAL).get();
            } catch (ExecutionException e) {
                // Not every task runs yet: try again.
                if (System.currentTimeMillis() > w) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
        long savedBy = System.currentTimeMillis();
        // Everything blue read before the savepoint was scheduled by savedBy (the source is paced),
        // so its event time is at most savedBy + jitter: it must be <= W, or green loses it.
        if (savedBy + JITTER_MS >= w) {
            throw new IllegalStateException("the savepoint completed only " + (savedBy - t0)
                    + " ms after T0; W is T0 + " + (w - t0) + " ms: the machine is too slow for this test");
        }
        Configuration restore = new Configuration();
        restore.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        restore.set(StateRecoveryOptions.SAVEPOINT_IGNORE_UNCLAIMED_STATE, true);
        JobClient green = submit(dir, "keyed", "GREEN", "v2", t0, w, common, restore);
        blue.getJobExecutionResult().get();
        green.getJobExecutionResult().get();
        System.out.println("SelfTest: savepoint upgrade done in " + (System.currentTimeMillis() - started)
                + " ms (savepoint at T0 + " + (savedBy - t0) + " ms: " + savepoint + ")");
        return w;
    }

    private static JobClient submit(Path dir, String topology, String color, String version, long t0, long w)
            throws Exception {
        return submit(dir, topology, color, version, t0, w,
                List.of("--records-per-split", Integer.toString(RECORDS_PER_SPLIT)), new Configuration());
    }

    private static JobClient submit(Path dir, String topology, String color, String version, long t0, long w,
            List<String> extra, Configuration conf) throws Exception {
        List<String> args = new ArrayList<>(extra);
        args.addAll(List.of("--output", dir.toString(), "--topology", topology,
                "--color", color, "--version", version, "--state-source", "static-handover", "--w", Long.toString(w),
                "--splits", Integer.toString(SPLITS), "--keys-per-split", Integer.toString(KEYS_PER_SPLIT), "--rate", "200", "--t0", Long.toString(t0),
                "--jitter-ms", Long.toString(JITTER_MS), "--idle-split", "1", "--idle-active-ms", "500", "--idle-cycle-ms", "1000",
                "--idleness-ms", "200", "--checkpoint-interval-ms", "300", "--parallelism", "2"));
        Map<String, String> parsed = ExampleJob.parse(args.toArray(new String[0]));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
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
