"""The base layer: what every other layer builds on, and which imports nothing of fabricsuite
but the top package (`fabricsuite`: the repository's paths and a few constants) and its own
modules. Units, directions and bound rules of a figure, the one series type (`metrics`), the
one reader protocol (`readout`), statistics (`stats`), command-line plumbing: usage errors,
shared options, the results directory, running a command (`commandline`), the console
(`console`) and the one number and time format (`formats`)."""
