package io.bluegreen.sql;

import java.util.List;

/**
 * The script cannot be handed over exactly once as written: thrown while the job is built, before
 * it is submitted, so that nothing is written. The message names every refused statement's sink
 * table, the column at fault and what would make it work.
 */
public final class RefusedStatementException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final List<String> reasons;

    RefusedStatementException(List<String> reasons) {
        super("bluegreen-sql-runner refuses this script (nothing was written): " + String.join("\n", reasons));
        this.reasons = List.copyOf(reasons);
    }

    /** One line per refused statement. */
    public List<String> reasons() {
        return reasons;
    }
}
