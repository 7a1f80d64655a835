package io.bluegreen.local;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.flink.api.common.JobID;
import org.apache.flink.client.program.PackagedProgram;
import org.apache.flink.client.program.PackagedProgramUtils;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.SavepointRestoreSettings;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;

/**
 * Runs one FlinkDeployment's job locally, the way a JobManager in application mode would: a
 * {@link MiniCluster} (one TaskManager) serving Flink's REST API on {@code --rest-port}, and the
 * user's job built from its jar with {@link PackagedProgram} (before the cluster starts, so a bad
 * jar or entry class fails fast) and submitted under {@code --job-id}.
 *
 * <p>Arguments: {@code --rest-port N --jar PATH --job-id HEX --parallelism N --conf FILE
 * [--entry-class NAME] [--savepoint PATH] [--allow-non-restored-state] [--error-file FILE]
 * [-- program args...]}. {@code --conf} is a Java properties file with the deployment's
 * {@code flinkConfiguration}; it applies to the cluster and to the program. When the job cannot be
 * built or submitted, the cause goes to {@code --error-file} and the process exits with 2.
 * Otherwise the process runs until it is killed.
 */
public final class LocalJobLauncher {
    private LocalJobLauncher() {}

    /** The parsed command line. */
    private static final class Args {
        int restPort = -1;
        String jar;
        String entryClass;
        String jobId;
        int parallelism = 1;
        String conf;
        String savepoint;
        boolean allowNonRestoredState;
        String errorFile;
        final List<String> programArgs = new ArrayList<>();

        static Args parse(String[] argv) {
            Args a = new Args();
            for (int i = 0; i < argv.length; i++) {
                String flag = argv[i];
                if (flag.equals("--")) {
                    for (int j = i + 1; j < argv.length; j++) {
                        a.programArgs.add(argv[j]);
                    }
                    break;
                }
                if (flag.equals("--allow-non-restored-state")) {
                    a.allowNonRestoredState = true;
                    continue;
                }
                if (i + 1 >= argv.length) {
                    throw new IllegalArgumentException(flag + " needs a value");
                }
                String value = argv[++i];
                switch (flag) {
                    case "--rest-port": a.restPort = Integer.parseInt(value); break;
                    case "--jar": a.jar = value; break;
                    case "--entry-class": a.entryClass = value; break;
                    case "--job-id": a.jobId = value; break;
                    case "--parallelism": a.parallelism = Integer.parseInt(value); break;
                    case "--conf": a.conf = value; break;
                    case "--savepoint": a.savepoint = value; break;
                    case "--error-file": a.errorFile = value; break;
                    default: throw new IllegalArgumentException("unknown flag " + flag);
                }
            }
            if (a.restPort < 0 || a.jar == null || a.jobId == null || a.conf == null) {
                throw new IllegalArgumentException("--rest-port, --jar, --job-id and --conf are required");
            }
            return a;
        }
    }

    /** Entry point; see the class comment for the arguments. */
    public static void main(String[] argv) throws Exception {
        Args args = Args.parse(argv);
        Configuration conf = loadConfiguration(Paths.get(args.conf));
        conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
        conf.set(RestOptions.ADDRESS, "127.0.0.1");
        conf.set(RestOptions.PORT, args.restPort);
        int slots = Math.max(args.parallelism, conf.get(TaskManagerOptions.NUM_TASK_SLOTS));
        conf.set(TaskManagerOptions.NUM_TASK_SLOTS, slots);
        SavepointRestoreSettings restore = args.savepoint == null
                ? SavepointRestoreSettings.none()
                : SavepointRestoreSettings.forPath(args.savepoint, args.allowNonRestoredState);
        if (args.savepoint != null) {
            conf.set(StateRecoveryOptions.SAVEPOINT_PATH, args.savepoint);
            conf.set(StateRecoveryOptions.SAVEPOINT_IGNORE_UNCLAIMED_STATE, args.allowNonRestoredState);
        }

        JobGraph graph;
        try {
            PackagedProgram.Builder builder = PackagedProgram.newBuilder()
                    .setJarFile(new File(args.jar))
                    .setArguments(args.programArgs.toArray(new String[0]))
                    .setConfiguration(conf)
                    .setSavepointRestoreSettings(restore);
            if (args.entryClass != null) {
                builder.setEntryPointClassName(args.entryClass);
            }
            PackagedProgram program = builder.build();
            graph = PackagedProgramUtils.createJobGraph(
                    program, conf, args.parallelism, JobID.fromHexString(args.jobId), false);
            graph.setSavepointRestoreSettings(restore);
        } catch (Throwable t) {
            fail(args.errorFile, t);
            return;
        }
        MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(slots)
                .build());
        try {
            cluster.start();
        } catch (Throwable t) {
            // A JobManager that cannot start (a REST port taken, a bad option) must end the
            // process: the cluster's non-daemon threads would otherwise keep it alive without
            // a REST API, and the runner would wait for its start-up timeout.
            fail(args.errorFile, t);
            return;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                cluster.close();
            } catch (Exception e) {
                // The process is going away anyway.
            }
        }));
        System.out.println("bluegreen-launcher: REST API on 127.0.0.1:" + args.restPort);

        try {
            cluster.submitJob(graph).get();
        } catch (Throwable t) {
            fail(args.errorFile, t);
            return;
        }
        System.out.println("bluegreen-launcher: submitted job " + graph.getJobID());
        Thread.currentThread().join();
    }

    /** Reads a properties file (every entry a Flink option) into a configuration. */
    private static Configuration loadConfiguration(Path file) throws IOException {
        Properties props = new Properties();
        try (InputStream in = Files.newInputStream(file)) {
            props.load(in);
        }
        Configuration conf = new Configuration();
        for (String key : props.stringPropertyNames()) {
            conf.setString(key, props.getProperty(key));
        }
        return conf;
    }

    /** Reports why the job could not start (cause chain first, then the stack) and exits 2. */
    private static void fail(String errorFile, Throwable t) throws IOException {
        StringBuilder causes = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (causes.length() > 0) {
                causes.append(" <- ");
            }
            causes.append(c.getClass().getName()).append(": ").append(c.getMessage());
        }
        StringWriter stack = new StringWriter();
        t.printStackTrace(new PrintWriter(stack));
        System.err.println("bluegreen-launcher: the job could not be submitted: " + causes);
        System.err.println(stack);
        if (errorFile != null) {
            Path target = Paths.get(errorFile);
            Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
            Files.write(tmp, causes.toString().getBytes(StandardCharsets.UTF_8));
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        }
        System.exit(2);
    }
}
