"""Several processes as one JAX job: ``kbl launch`` on one machine, the same variables on N hosts.

JAX's multi-process runtime (``jax.distributed.initialize``) joins processes — one per host on a
GPU/TPU cluster — into one job: process 0 runs a coordination service at ``HOST:PORT``, every
process connects to it, and from then on ``jax.devices()`` lists the devices of all of them while
each feeds only its own (``jax.local_devices()``). ``keras.distribution`` meshes span all
devices; ``DataParallel``'s ``distribute_dataset`` gives each process its slice of every global
batch. On CPUs the collectives between processes go through Gloo
(``jax_cpu_collectives_implementation``).

Each process learns its place from the variables Keras' own ``keras.distribution.initialize``
reads: ``KERAS_DISTRIBUTION_JOB_ADDRESSES`` (the coordinator, ``HOST:PORT``),
``KERAS_DISTRIBUTION_NUM_PROCESSES`` and ``KERAS_DISTRIBUTION_PROCESS_ID``. :func:`launch` sets
them for ``N`` local processes (with ``K`` simulated CPU devices each); on real hosts set them
by hand, or from the cluster's scheduler, and run the same ``kbl`` command on each.

JAX aborts a process (``SIGABRT``, no exception) when the coordinator does not answer within its
timeout, so :func:`join` first waits for the coordinator's port itself, for ``timeout`` seconds,
and raises a ``ConfigError`` naming the address when it never opens.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import keras

from keras_bert_lab.errors import ConfigError

ADDRESS, COUNT, INDEX = ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "KERAS_DISTRIBUTION_NUM_PROCESSES",
                         "KERAS_DISTRIBUTION_PROCESS_ID")
TIMEOUT = "KBL_COORDINATOR_TIMEOUT"  # seconds to wait for the coordinator (default 60)
DEFAULT_COORDINATOR = "127.0.0.1:12355"
DISTRIBUTED_FLAGS = ("--data-parallel", "--model-parallel")
_joined = []


def _host_port(address):
    host, _, port = str(address).rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"Coordinator address {address!r} must be HOST:PORT, e.g. "
                          f"{DEFAULT_COORDINATOR} (process 0's host and a free port).")
    return host, int(port)


def wait_for_coordinator(address, timeout):
    """Return once ``address`` (``HOST:PORT``) accepts a TCP connection; ``ConfigError`` naming
    it after ``timeout`` seconds."""
    host, port = _host_port(address)
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=min(2.0, timeout)):
                return
        except OSError as error:
            reason = error.strerror or type(error).__name__
            if time.monotonic() >= deadline:
                raise ConfigError(
                    f"The coordinator at {address} could not be reached within {timeout:g} s "
                    f"({reason}). Start process 0 first (it serves the coordinator), check the "
                    f"address and that the port is open between the hosts, or set {TIMEOUT} "
                    "to wait longer.") from None
            time.sleep(0.2)


def join(coordinator, num_processes, process_id, timeout=60.0):
    """Join this process to a JAX job of ``num_processes`` (no-op when there is one, or when it
    has joined already); returns ``(process_id, num_processes)``."""
    num_processes, process_id = int(num_processes), int(process_id)
    if num_processes <= 1 or _joined:
        return (_joined or [(0, 1)])[0]
    if not 0 <= process_id < num_processes:
        raise ConfigError(f"Process id {process_id} is outside 0..{num_processes - 1}.")
    if process_id:  # the coordinator itself starts the service inside initialize()
        wait_for_coordinator(coordinator, timeout)
    else:
        _host_port(coordinator)
    # jax.distributed.initialize underneath; on CPU devices JAX's collectives between processes
    # default to Gloo (jax_cpu_collectives_implementation, jax >= 0.4.36).
    keras.distribution.initialize(coordinator, num_processes, process_id)
    _joined.append((process_id, num_processes))
    return process_id, num_processes


def join_from_environment():
    """:func:`join` with the ``KERAS_DISTRIBUTION_*`` variables, when they name several
    processes; returns ``(process_id, num_processes)`` (``(0, 1)`` for a single process)."""
    count = int(os.environ.get(COUNT) or 1)
    if count <= 1:
        return 0, 1
    address = (os.environ.get(ADDRESS) or "").split(",")[0]
    if not address or os.environ.get(INDEX) is None:
        raise ConfigError(f"{COUNT}={count} needs {ADDRESS} (the coordinator, HOST:PORT) and "
                          f"{INDEX} (this process, 0..{count - 1}) too.")
    return join(address, count, os.environ[INDEX], float(os.environ.get(TIMEOUT) or 60))


def process_output(output_dir):
    """Where this process writes a run: ``output_dir`` for process 0, ``output_dir.process-I``
    for the others (each keeps its own checkpoints, so that every process can resume)."""
    index = _joined[0][0] if _joined else 0
    return output_dir if index == 0 else f"{str(output_dir).rstrip(os.sep)}.process-{index}"


def child_environment(base, coordinator, processes, index, devices):
    """The environment of local process ``index``: the JAX backend, ``devices`` simulated CPU
    devices and the ``KERAS_DISTRIBUTION_*`` variables."""
    flags = " ".join(f for f in base.get("XLA_FLAGS", "").split()
                     if not f.startswith("--xla_force_host_platform_device_count"))
    return dict(base, KERAS_BACKEND="jax", JAX_PLATFORMS=base.get("JAX_PLATFORMS", "cpu"),
                XLA_FLAGS=f"{flags} --xla_force_host_platform_device_count={devices}".strip(),
                **{ADDRESS: coordinator, COUNT: str(processes), INDEX: str(index)})


def _relay(stream, prefix, out):
    for line in iter(stream.readline, ""):
        out.write(prefix + line)
        out.flush()


def launch(command, processes, devices_per_process=4, coordinator=DEFAULT_COORDINATOR,
           timeout=60.0, env=None, out=None):
    """Run ``kbl COMMAND…`` in ``processes`` local processes joined as one JAX job; returns the
    exit status (the first failing process's, after the others are stopped).

    Args:
        command: the ``kbl`` arguments, e.g. ``["pretrain", "--data-parallel", …]``; they must
            hold ``--data-parallel`` or ``--model-parallel`` (else each process would train its
            own copy).
        processes: how many processes (simulated hosts).
        devices_per_process: simulated CPU devices each (XLA's host device count).
        coordinator: ``HOST:PORT`` process 0 serves the coordination service on.
        timeout: seconds a process waits for the coordinator.
    """
    out = out or sys.stdout
    command = list(command)
    if command and command[0] == "--":
        command = command[1:]
    if processes < 1 or devices_per_process < 1:
        raise ConfigError("--processes and --devices-per-process must be at least 1.")
    if not command or command[0] not in ("pretrain", "finetune"):
        raise ConfigError("kbl launch runs a training command: kbl launch --processes N -- "
                          "pretrain|finetune … --data-parallel")
    if not any(arg.split("=")[0] in DISTRIBUTED_FLAGS for arg in command):
        raise ConfigError("Add --data-parallel or --model-parallel BxM to the command: without a "
                          "distribution every process would train a model of its own.")
    _host_port(coordinator)
    base = dict(os.environ if env is None else env, **{TIMEOUT: str(timeout)})
    children = []
    for index in range(processes):
        children.append(subprocess.Popen(
            [sys.executable, "-m", "keras_bert_lab.cli", *command],
            env=child_environment(base, coordinator, processes, index, devices_per_process),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1))
    relays = [threading.Thread(target=_relay, args=(c.stdout, f"[{i}] ", out), daemon=True)
              for i, c in enumerate(children)]
    for relay in relays:
        relay.start()
    status = 0
    try:
        running = set(range(processes))
        while running and not status:
            for index in sorted(running):
                code = children[index].poll()
                if code is None:
                    continue
                running.discard(index)
                if code:
                    status = code if code > 0 else 128 - code
                    out.write(f"kbl launch: process {index} exited with status {code}; "
                              "stopping the others.\n")
            time.sleep(0.1)
    finally:
        for child in children:  # only the processes this launch started
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        for relay in relays:
            relay.join(timeout=5)
    return status


def add_arguments(parser):
    """``kbl launch`` options."""
    parser.add_argument("--processes", type=int, required=True,
                        help="processes to start on this machine (each plays a host)")
    parser.add_argument("--devices-per-process", type=int, default=4,
                        help="simulated CPU devices per process (XLA's host device count)")
    parser.add_argument("--coordinator", default=DEFAULT_COORDINATOR,
                        help="HOST:PORT of process 0's coordination service")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds a process waits for the coordinator before giving up")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- then the kbl command, e.g. -- pretrain --data-parallel …")


def main(args):
    """``kbl launch``: exits with the status of the job."""
    status = launch(args.command, args.processes, args.devices_per_process, args.coordinator,
                    args.timeout)
    if status:
        raise SystemExit(status)
