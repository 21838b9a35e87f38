"""The check layer: the ReFrame side the test plans in the repository's `checks/` build on. It
imports the base and data layers and its own modules, never a command. One base every check
is judged by (`judged_check`: reference loading rules, confirmation, a check's declared
figures), the mechanics both families share (`check_base`: exit status, references read
once, placement on nodes), and the two families beside each other, neither importing the
other: netbench's (`rfm_netbench`) and the external suites' (`rfm_external`)."""
