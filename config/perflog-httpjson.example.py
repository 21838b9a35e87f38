"""Example: export every performance record to a time-series store (off by default).

The suite's settings add ReFrame's `httpjson` perflog handler when FABRICSUITE_PERFLOG_URL is
set, e.g. for an Elasticsearch index:

    FABRICSUITE_PERFLOG_URL=http://es.example.org:9200/fabricsuite/_doc \\
        .venv/bin/fabricsuite nightly --system mycluster

Each record is one JSON document per check run (POSTed as it is logged), with the same fields as
the perflog files: check_system, check_partition, check_environ, check_display_name, the
loggable variables (distance, scale, mpi_library, netbench_version, perf_directions, ...) and
check_perfvalues (value, reference, bounds, unit, result per variable), plus the `extras` below.

For a site with its own settings file, the handler looks like this (ReFrame 4.10 schema); add
it to `logging[0]["handlers_perflog"]`:
"""

HTTPJSON_HANDLER = {
    "type": "httpjson",
    "url": "http://es.example.org:9200/fabricsuite/_doc",
    "level": "info",
    "extras": {"facility": "fabricsuite", "site": "example-center"},
    # An Elasticsearch index wants no dots in field names: ReFrame's json_formatter can rename;
    # here we only drop the bulky fields.
    "ignore_keys": ["check_executable_opts", "check_env_vars", "check_variables"],
    # token auth, if the store needs it
    # "authorization_header": "Bearer <token>",
    "backoff_intervals": [0.5, 1],
    "retry_timeout": 5,
}
