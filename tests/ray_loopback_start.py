"""``ray start`` for the tests' cluster, kept on loopback.

Ray 2.60 "resolves" 127.0.0.1 to the machine's interface address wherever a
node, a worker or a driver is told an address (services.resolve_ip_for_
localhost), unless Ray runs single-host (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0),
where it keeps loopback but refuses to join a second node. The tests'
cluster must send nothing to the interface: every process of it gets the
single-host setting through its environment (tests/ray_cluster.py), and this
command, the one place that refuses, runs Ray's own ``ray start`` with the
join allowed and the addresses it was given taken as they are.

Usage: python tests/ray_loopback_start.py ARGS...   (the ``ray start`` args)
"""

from __future__ import annotations

import sys

import ray._private.ray_constants as ray_constants
import ray._private.services as services
from ray.scripts.scripts import main

ray_constants.ENABLE_RAY_CLUSTER = True  # let this node join a head
services.resolve_ip_for_localhost = lambda host: host  # 127.0.0.1 stays 127.0.0.1

if __name__ == "__main__":
    sys.argv = ["ray", "start", *sys.argv[1:]]
    sys.exit(main())
