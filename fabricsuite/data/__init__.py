"""The data layer: one reading of every file the suite writes or is given, and the one verdict
of a stored session. It imports the base layer and its own modules only, never a check or a
command, and loads no ReFrame at import time (only the functions that read ReFrame's results
database import it). Run reports and ReFrame's database (`store`), the one case model and
health rule (`cases`), the session's verdict of every case (`session_verdict`: the only reader
of a run report's raw verdict fields), its findings (`findings`), netbench's output and its
declarations (`netbench_result`, `declarations`), the external suites' output (`external`,
`npb`), the limits of the cores (`limits`), the node's counters, links, transport and CPU wait
(`counters`, `links`, `transport`, `interference`), its topology and the switch tree
(`topology`, `switches`), the machine and its references (`machine`, `references`), and the
programs and Spack environment the checks run (`programs`, `spackenv`)."""
