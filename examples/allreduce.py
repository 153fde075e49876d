#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""MPI_Allreduce of numpy arrays with mpi4py, over mroc through Open MPI.

Run it like any MPI program, with Open MPI's libfabric path and the mroc
provider (README.md, "Using mroc from MPI and libfabric applications"):

    export FI_PROVIDER_PATH=/usr/local/lib/libfabric
    mpirun -np 2 --host hosta,hostb --mca pml cm --mca mtl ofi \\
        --mca mtl_ofi_provider_include mroc python3 allreduce.py

Each rank contributes arange(n) + rank for n from 1 to 256 Ki elements
(float64 and int32); every element of every result is checked against
what the sum must be, and rank 0 prints one line per size. Exit 1 on a
wrong element.
"""
import sys

import numpy as np
from mpi4py import MPI


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    # The sum over ranks r of (i + r) is size * i + size * (size - 1) / 2.
    offset = size * (size - 1) // 2
    for dtype in (np.float64, np.int32):
        for n in (1, 1000, 65536, 1 << 18):
            mine = np.arange(n, dtype=dtype) + rank
            total = np.empty_like(mine)
            start = MPI.Wtime()
            comm.Allreduce(mine, total, op=MPI.SUM)
            took = MPI.Wtime() - start
            want = np.arange(n, dtype=dtype) * size + offset
            wrong = np.flatnonzero(total != want)
            if wrong.size:
                i = wrong[0]
                print(f"rank {rank}: {np.dtype(dtype).name} x {n}: element {i} is {total[i]}, "
                      f"not {want[i]}", file=sys.stderr)
                comm.Abort(1)
            if rank == 0:
                print(f"allreduce {np.dtype(dtype).name:7} x {n:8}: {size} ranks, "
                      f"{took * 1e3:9.3f} ms, every element checked")
    comm.Barrier()
    if rank == 0:
        print(f"# {MPI.Get_library_version().splitlines()[0]}")
        print("# results verified")


if __name__ == "__main__":
    main()
