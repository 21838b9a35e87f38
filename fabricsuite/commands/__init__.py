"""The commands (workflows): what a person or a scheduler runs, `fabricsuite <command>`
(`cli`) and `python -m fabricsuite.commands.<module>`. They import the base and data layers
and each other, never the check layer, so that a command runs without ReFrame's test framework
(ReFrame itself runs as a program: `nightly`). The nightly run and its outcome (`nightly`,
`session`), references from stored runs (`baseline`, `machine_references`), history, compare
and the report page (`history`, `compare`, `report`), onboarding (`init`), acting on the
findings through Slurm (`act`), the emulated cluster (`emucluster`) and the external suites'
builds (`suite_builds`)."""
