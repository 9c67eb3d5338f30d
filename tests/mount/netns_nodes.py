"""Simulated cluster nodes on one machine: Linux network namespaces on a bridge.

    with netns_nodes.Nodes(2) as nodes:
        server = start_server(host=nodes.host_address)       # listens on the bridge
        subprocess.Popen(nodes.command(0, ["ossmount", ...]))  # runs inside node 0

Each node K is a network namespace `ossmount-nodeK-<run>` holding one end of a veth pair
(`eth0`, address 10.213.N.(K+2)/24) and its own loopback; the other end is a port of a
bridge `osmbr-<run>` that holds the host's address on that subnet, 10.213.N.1. So every node
has its own address and reaches servers that listen on the host's bridge address, and the
servers see one client address per node. <run> and the third octet N are chosen per
instance among the ones not in use, so parallel test runs never clash.

Only the network namespace is entered (nsenter --net), not a mount namespace: `ip netns
exec` would also unshare the mount namespace (to remount /sys), and a FUSE mount made inside
would then be invisible to the host and to the other nodes. Mounts made by a node's daemon
are therefore ordinary mounts of the host, which is also what a DaemonSet with bidirectional
propagation produces on a real node.

Teardown (on exit of the `with`, also after an exception, and if setup fails half-way)
deletes the namespaces (their veth ends go with them) and the bridge. Processes still
running inside a namespace keep it alive after its name is gone; the caller stops its
processes first.

Needs root, iproute2's `ip`, util-linux's `nsenter`, and a kernel with bridge and veth
support; `unsupported_reason()` says what is missing, for a test to skip (exit 77).
"""
import os
import random
import re
import shutil
import subprocess
import sys

SUBNET_BASE = "10.213"  # nodes get 10.213.N.0/24 with N free on this machine


def _ip(*args, check=True, netns=None):
    cmd = ["ip"] + (["-n", netns] if netns else []) + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return r


def unsupported_reason():
    """None when nodes can be made here, else why not (for a skip message)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "nsenter"):
        if shutil.which(tool) is None:
            return "'%s' is not installed" % tool
    probe = "osmprobe%d" % (os.getpid() % 100000)
    r = _ip("link", "add", probe, "type", "bridge", check=False)
    if r.returncode != 0:
        return "cannot create a bridge: " + r.stderr.strip()
    _ip("link", "del", probe, check=False)
    r = _ip("link", "add", probe + "a", "type", "veth", "peer", "name", probe + "b", check=False)
    if r.returncode != 0:
        return "cannot create a veth pair: " + r.stderr.strip()
    _ip("link", "del", probe + "a", check=False)
    return None


def _subnets_in_use():
    out = _ip("-4", "-o", "addr", "show").stdout
    used = set()
    for m in re.finditer(r"inet %s\.(\d+)\." % re.escape(SUBNET_BASE), out):
        used.add(int(m.group(1)))
    return used


class Nodes:
    """N network namespaces on a private bridge (see the module docstring)."""

    def __init__(self, count):
        if count < 1 or count > 200:
            raise ValueError("1 to 200 nodes")
        self.count = count
        self.run = "%04x%02x" % (os.getpid() & 0xFFFF, random.randrange(256))
        self.bridge = "osmbr-" + self.run  # at most 15 bytes (IFNAMSIZ)
        self.names = ["ossmount-node%d-%s" % (k, self.run) for k in range(count)]
        self._made_netns = []
        self._made_links = []
        self._made_bridge = False
        self.octet = None

    # --- addresses and commands ---

    @property
    def host_address(self):
        """The host's address on the nodes' subnet (the bridge's): where servers listen."""
        return "%s.%d.1" % (SUBNET_BASE, self.octet)

    def address(self, k):
        return "%s.%d.%d" % (SUBNET_BASE, self.octet, k + 2)

    def command(self, k, argv):
        """argv run inside node k's network namespace (and nothing else of it)."""
        return ["nsenter", "--net=/run/netns/" + self.names[k], "--"] + list(argv)

    # --- lifetime ---

    def __enter__(self):
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _setup(self):
        used = _subnets_in_use()
        free = [n for n in range(1, 255) if n not in used]
        if not free:
            raise RuntimeError("no free %s.N.0/24 subnet" % SUBNET_BASE)
        self.octet = random.choice(free)
        _ip("link", "add", self.bridge, "type", "bridge")
        self._made_bridge = True
        _ip("addr", "add", "%s/24" % self.host_address, "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for k, name in enumerate(self.names):
            _ip("netns", "add", name)
            self._made_netns.append(name)
            host_end = "osmv%d-%s" % (k, self.run)
            if len(host_end) > 15:
                raise RuntimeError("interface name too long: " + host_end)
            _ip("link", "add", host_end, "type", "veth", "peer", "name", "osmtmp" + self.run)
            self._made_links.append(host_end)
            _ip("link", "set", "osmtmp" + self.run, "netns", name)
            _ip("link", "set", "osmtmp" + self.run, "name", "eth0", netns=name)
            _ip("link", "set", host_end, "master", self.bridge)
            _ip("link", "set", host_end, "up")
            _ip("addr", "add", "%s/24" % self.address(k), "dev", "eth0", netns=name)
            _ip("link", "set", "eth0", "up", netns=name)
            _ip("link", "set", "lo", "up", netns=name)

    def can_connect(self, k, port, address=None):
        """True when node k opens a TCP connection to `address` (the host's bridge address)
        on `port`: the proof that a server there is reachable from inside the node."""
        probe = ("import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 5)"
                 ".close()")
        r = subprocess.run(self.command(k, [sys.executable, "-c", probe, address or self.host_address,
                                            str(port)]), capture_output=True, text=True)
        return r.returncode == 0

    def close(self):
        """Removes every namespace and the bridge made so far; safe to call twice."""
        for name in reversed(self._made_netns):
            _ip("netns", "del", name, check=False)
        self._made_netns = []
        for link in self._made_links:  # gone with their namespace, unless setup stopped early
            _ip("link", "del", link, check=False)
        self._made_links = []
        if self._made_bridge:
            _ip("link", "del", self.bridge, check=False)
            self._made_bridge = False


def leftovers(run):
    """The namespaces and links of the Nodes whose `run` id is given that still exist (a
    test's check that teardown left nothing behind)."""
    names = _ip("netns", "list", check=False).stdout.split()
    netns = [n for n in names if n.startswith("ossmount-node") and n.endswith("-" + run)]
    links = [l for l in re.findall(r"^\d+: ([^:@\s]+)", _ip("-o", "link", "show").stdout, re.M)
             if l.endswith(run)]
    return netns, links


if __name__ == "__main__":
    # Self-check: python3 netns_nodes.py [N]
    reason = unsupported_reason()
    if reason:
        print("skip:", reason)
        sys.exit(77)
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    nodes = Nodes(n)
    with nodes:
        print("bridge %s at %s" % (nodes.bridge, nodes.host_address))
        for k in range(n):
            out = subprocess.run(nodes.command(k, ["ip", "-4", "-o", "addr", "show", "eth0"]),
                                 capture_output=True, text=True).stdout.strip()
            print("node %d: %s" % (k, out))
    print("after teardown:", leftovers(nodes.run))
