package io.bluegreen.gate;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MetricOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

/** One Flink MiniCluster for the JVM tests, with its REST API (random port) for reading gate metrics. */
final class LocalFlink implements AutoCloseable {
    private static LocalFlink shared;

    final MiniCluster cluster;
    final URI rest;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private LocalFlink(int slots) throws Exception {
        Configuration conf = new Configuration();
        conf.set(RestOptions.BIND_PORT, "0");
        conf.set(RestOptions.ADDRESS, "127.0.0.1");
        conf.set(MetricOptions.METRIC_FETCHER_UPDATE_INTERVAL, Duration.ofMillis(100));
        conf.set(TaskManagerOptions.NUM_TASK_SLOTS, slots);
        cluster = new MiniCluster(new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(slots)
                .withRandomPorts()
                .build());
        cluster.start();
        rest = cluster.getRestAddress().get(30, TimeUnit.SECONDS);
    }

    /** The JVM-wide cluster (8 slots), started on first use. */
    static synchronized LocalFlink shared() throws Exception {
        if (shared == null) {
            shared = new LocalFlink(8);
        }
        return shared;
    }

    /** Submits the job built in {@code env} under {@code name}. */
    JobID submit(StreamExecutionEnvironment env, String name) throws Exception {
        StreamGraph sg = env.getStreamGraph();
        sg.setJobName(name);
        JobGraph jg = sg.getJobGraph();
        return cluster.submitJob(jg).get(30, TimeUnit.SECONDS).getJobID();
    }

    /** Waits for the job's end; returns null on success, the failure otherwise. */
    Throwable await(JobID job, long timeoutMs) throws Exception {
        JobResult r = cluster.requestJobResult(job).get(timeoutMs, TimeUnit.MILLISECONDS);
        if (r.isSuccess()) {
            return null;
        }
        if (r.getSerializedThrowable().isPresent()) {
            return r.getSerializedThrowable().get().deserializeError(LocalFlink.class.getClassLoader());
        }
        // The job's status, not JobResult's: getApplicationStatus (1.20) became getJobStatus (2.x).
        return new RuntimeException("job " + job + " ended with " + cluster.getJobStatus(job).get(10, TimeUnit.SECONDS));
    }

    /** Runs the job built in {@code env} to its end; returns its net runtime in ms (Flink's, from RUNNING to the end). */
    long runMs(StreamExecutionEnvironment env, String name, long timeoutMs) throws Exception {
        JobID job = submit(env, name);
        JobResult r = cluster.requestJobResult(job).get(timeoutMs, TimeUnit.MILLISECONDS);
        if (!r.isSuccess()) {
            throw new IllegalStateException("job " + name + " failed", await(job, timeoutMs));
        }
        return r.getNetRuntime();
    }

    void cancel(JobID job) {
        try {
            cluster.cancelJob(job).get(10, TimeUnit.SECONDS);
        } catch (Exception ignored) {
            // already finished
        }
    }

    Object getJson(String path) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(rest.resolve(path)).timeout(Duration.ofSeconds(10)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IllegalStateException("GET " + path + ": HTTP " + r.statusCode() + " " + r.body());
        }
        return Json.parse(r.body());
    }

    /** The id of the job vertex whose name contains {@code part} (e.g. "bluegreen-gate"). */
    @SuppressWarnings("unchecked")
    String vertex(JobID job, String part) throws Exception {
        Map<String, Object> j = (Map<String, Object>) getJson("/jobs/" + job);
        for (Object v : (List<Object>) j.get("vertices")) {
            Map<String, Object> m = (Map<String, Object>) v;
            if (((String) m.get("name")).contains(part)) {
                return (String) m.get("id");
            }
        }
        throw new IllegalStateException("no vertex named like " + part + " in " + j.get("vertices"));
    }

    /**
     * The values of the operator metric ending in {@code "." + metric} for every subtask of
     * {@code vertex} (as the controller reads them: {@code /jobs/:id/vertices/:vid/subtasks/:i/metrics}),
     * or null while some subtask does not report it yet.
     */
    @SuppressWarnings("unchecked")
    List<String> subtaskMetric(JobID job, String vertex, int parallelism, String metric) throws Exception {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < parallelism; i++) {
            String base = "/jobs/" + job + "/vertices/" + vertex + "/subtasks/" + i + "/metrics";
            String id = null;
            for (Object o : (List<Object>) getJson(base)) {
                String name = (String) ((Map<String, Object>) o).get("id");
                if (name.endsWith("." + metric)) {
                    id = name;
                }
            }
            if (id == null) {
                return null;
            }
            List<Object> vals = (List<Object>) getJson(base + "?get=" + java.net.URLEncoder.encode(id, java.nio.charset.StandardCharsets.UTF_8));
            if (vals.isEmpty()) {
                return null;
            }
            out.add((String) ((Map<String, Object>) vals.get(0)).get("value"));
        }
        return out;
    }

    @Override
    public void close() throws Exception {
        cluster.close();
    }
}
