"""TEMPLATE: a production Slurm cluster. Copy this file to config/systems/<your system>.py (and
config/spack/examplecluster.yaml to config/spack/<your system>.yaml), then adapt every value
marked SITE. It never matches a host here (its hostnames are examples); CI uses it with
`--system examplecluster --dry-run` to check the generated build and job scripts.

- Partition `cpu`: the main fabric. Slurm (`sbatch`, accounting through ReFrame's `slurm`
  scheduler; use `squeue` where there is no slurmdbd), `srun` launcher, full nodes.
- Partition `gpu`: a second fabric or GPU partition, so that references are kept apart.
- Spack is available on both (`extras.spack`): the external suites build through ReFrame's Spack
  build system in an environment made from spack.yaml + the site file, with a persistent install
  tree so that nightly runs reuse the builds. The site's MPI is an external there, never built.
- `extras.nodes` is how many nodes a check may ask for (node counts beyond it are skipped);
  `extras.hwloc_xml` the node topology (`lstopo --of xml` on a compute node, once per node type)
  for the intra-node distance classes.
"""

_SPACK_ROOT = "/opt/spack"  # SITE: where Spack is installed (same path on login and compute)
_SPACK = {
    "site": "config/spack/examplecluster.yaml",
    "install_tree": "/scratch/fabricsuite/spack-opt",  # SITE: persistent, shared by nodes
    "install_opts": ["--fail-fast"],
}
# Every job (build and run) needs `spack` on its path.
_PREPARE = [f". {_SPACK_ROOT}/share/spack/setup-env.sh"]

site_configuration = {
    "systems": [
        {
            "name": "examplecluster",
            "descr": "TEMPLATE Slurm cluster: copy and adapt (see the file's docstring)",
            "hostnames": [r"^excl-login\d+\.example\.org$"],  # SITE: the login nodes
            "modules_system": "nomod",  # SITE: "lmod" where the MPI comes as a module
            "partitions": [
                {
                    "name": "cpu",
                    "descr": "CPU nodes, main fabric (SITE: e.g. InfiniBand NDR, 2 x 64 cores)",
                    "scheduler": "slurm",
                    "launcher": "srun",
                    "access": ["--partition=cpu", "--exclusive"],  # SITE: --account=...
                    "environs": ["site-openmpi"],
                    "features": ["mpi"],
                    "processor": {"num_cpus": 128, "num_cpus_per_core": 1, "num_sockets": 2,
                                  "num_cpus_per_socket": 64},
                    "prepare_cmds": _PREPARE,
                    "extras": {
                        "nodes": 64,
                        "spack": _SPACK,
                        # "hwloc_xml": "config/topology/examplecluster-cpu.xml",
                        # What must carry the messages between nodes, per environment: a run
                        # that fell back to another transport (TCP) fails in sanity, naming it
                        # (fabricsuite.data.transport). SITE: the pml/btl or UCX transports you use.
                        "transport": {"site-openmpi": {"network": r"ucx:.*\b(rc|dc|ud)"}},
                    },
                    "max_jobs": 8,
                },
                {
                    "name": "gpu",
                    "descr": "GPU nodes, second fabric (SITE: e.g. Slingshot, 4 GPUs per node)",
                    "scheduler": "slurm",
                    "launcher": "srun",
                    "access": ["--partition=gpu", "--exclusive"],
                    "environs": ["site-openmpi"],
                    "features": ["mpi", "gpu"],
                    "processor": {"num_cpus": 64, "num_cpus_per_core": 1, "num_sockets": 1,
                                  "num_cpus_per_socket": 64},
                    "resources": [{"name": "gpu", "options": ["--gres=gpu:{num_gpus}"]}],
                    "prepare_cmds": _PREPARE,
                    "extras": {"nodes": 16, "spack": _SPACK},
                    "max_jobs": 4,
                },
            ],
        }
    ],
    "environments": [
        {
            # The site's Open MPI (SITE: a module, or its prefix on PATH)
            "name": "site-openmpi",
            "target_systems": ["examplecluster"],
            "features": ["mpi"],
            "cc": "mpicc",
            "env_vars": [["PATH", "/opt/site/openmpi/4.1.6/bin:$PATH"]],
        }
    ],
}
