package io.bluegreen.local;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.Core;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.appender.rewrite.RewritePolicy;
import org.apache.logging.log4j.core.config.plugins.Plugin;
import org.apache.logging.log4j.core.config.plugins.PluginFactory;
import org.apache.logging.log4j.core.impl.Log4jLogEvent;
import org.apache.logging.log4j.message.SimpleMessage;

/**
 * A log4j2 rewrite policy (plugin {@code HarmlessRestErrors}, used by the log4j2 configuration
 * the local runner writes) that downgrades to INFO, as one line without the stack trace, the REST
 * handler ERRORs every handover produces and nothing else:
 *
 * <ul>
 *   <li>{@code SavepointHandlers$SavepointStatusHandler}: "There is no savepoint operation with
 *       triggerId …", a status poll for a trigger id the JobManager does not (or no longer) know;
 *   <li>{@code CheckpointingStatisticsHandler}: "Unhandled exception." caused by "… not available
 *       while the JobManager is initializing", a checkpoint poll of a job still starting.
 * </ul>
 *
 * Every other event, of these loggers too, passes unchanged.
 */
@Plugin(
    name = "HarmlessRestErrors",
    category = Core.CATEGORY_NAME,
    elementType = "rewritePolicy",
    printObject = true)
public final class HarmlessRestErrors implements RewritePolicy {
  /** The savepoint status handler's logger. */
  public static final String SAVEPOINT_STATUS =
      "org.apache.flink.runtime.rest.handler.job.savepoints.SavepointHandlers$SavepointStatusHandler";
  /** The checkpoint statistics handler's logger. */
  public static final String CHECKPOINT_STATISTICS =
      "org.apache.flink.runtime.rest.handler.job.checkpoints.CheckpointingStatisticsHandler";

  private static final String UNKNOWN_TRIGGER = "There is no savepoint operation with triggerId";
  private static final String INITIALIZING = "JobManager is initializing";
  /** Appended to a downgraded message. */
  public static final String MARK = "[harmless, downgraded from ERROR by the local runner";

  /** The policy; it has no parameters. */
  @PluginFactory
  public static HarmlessRestErrors create() {
    return new HarmlessRestErrors();
  }

  @Override
  public LogEvent rewrite(LogEvent event) {
    String cause = harmless(event);
    if (cause == null) {
      return event;
    }
    String message = event.getMessage().getFormattedMessage() + " " + MARK + ": " + cause + "]";
    return new Log4jLogEvent.Builder(event)
        .setLevel(Level.INFO)
        .setMessage(new SimpleMessage(message))
        .setThrown(null)
        .setThrownProxy(null)
        .build();
  }

  /** The known-harmless cause of an ERROR event, or null when it is not one. */
  static String harmless(LogEvent event) {
    if (event.getLevel() != Level.ERROR) {
      return null;
    }
    if (SAVEPOINT_STATUS.equals(event.getLoggerName())) {
      String message = event.getMessage().getFormattedMessage();
      return message != null && message.contains(UNKNOWN_TRIGGER) ? "unknown trigger id" : null;
    }
    if (CHECKPOINT_STATISTICS.equals(event.getLoggerName())) {
      for (Throwable t = event.getThrown(); t != null; t = t.getCause()) {
        String message = t.getMessage();
        if (message != null && message.contains(INITIALIZING)) {
          return t.getClass().getName() + ": " + message;
        }
        if (t.getCause() == t) {
          break;
        }
      }
    }
    return null;
  }
}
