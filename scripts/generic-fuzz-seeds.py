#!/usr/bin/env python3
"""Seed inputs for QEMU's generic fuzzer on accel-pci (scripts/fuzz-generic.sh).

From an empty corpus the fuzzer takes minutes to find a queue: these inputs
program queue 0 and ring it, with the descriptors the device fetches given
as the DMA pattern (generic_fuzz.c fills every DMA read of guest RAM with
it). Each opcode in each direction, a bad one, and two rung at once.

Usage: generic-fuzz-seeds.py DIR  (writes seed-* files into DIR)
"""
import struct
import sys
from pathlib import Path

SEPARATOR = b"FUZZ"
OP_WRITE, OP_ADD_DMA_PATTERN, OP_CLOCK_STEP = 3, 7, 9
LONG = 2                      # op_write's size: Byte, Word, Long, Quad
REGS = 0                      # the first fuzzable region: BAR0's registers
QUEUE, STRIDE = 0x1000, 0x100
RING_BASE_LO, RING_SIZE, CTRL, TAIL = 0x00, 0x08, 0x0C, 0x14
RING, DATA = 0x100000, 0x200000
SRC_VRAM, DST_VRAM, IRQ = 1, 2, 4
NOP, COPY, FILL, FENCE = 0, 1, 2, 3


def desc(opcode, flags=0, src=0, dst=0, length=0):
    return struct.pack("<IIQQQ32x", opcode, flags, src, dst, length)


def write(offset, value):
    # struct { u8 size; u8 base; u32 offset; u64 value; }: padded to 16
    return bytes([OP_WRITE]) + struct.pack("<BBxxIQ", LONG, REGS, offset,
                                           value)


def pattern(data):
    return bytes([OP_ADD_DMA_PATTERN]) + struct.pack("<BB", 0, 0) + data


def queue_run(q, descs):
    """Queue q's ring at RING, its descriptors as the DMA pattern, rung."""
    base = QUEUE + q * STRIDE
    return [pattern(b"".join(descs)),
            write(base + RING_BASE_LO, RING + q * 0x1000),
            write(base + RING_SIZE, 8),
            write(base + CTRL, 1),
            write(base + TAIL, len(descs)),
            bytes([OP_CLOCK_STEP])]


SEEDS = {
    "fill-vram": queue_run(0, [desc(FILL, DST_VRAM | IRQ, 0xAB, 0, 4096)]),
    "copy-to-vram": queue_run(0, [desc(COPY, DST_VRAM, DATA, 0x1000, 8192)]),
    "copy-from-vram": queue_run(0, [desc(COPY, SRC_VRAM, 0, DATA, 8192)]),
    "copy-in-vram": queue_run(0, [desc(COPY, SRC_VRAM | DST_VRAM | IRQ,
                                       0, 0x8000, 65536 + 3)]),
    "fill-ram": queue_run(0, [desc(FILL, IRQ, 0x5A, DATA, 300000)]),
    "fence": queue_run(0, [desc(FENCE, IRQ, 0x1234, DATA)]),
    "nop": queue_run(0, [desc(NOP), desc(NOP, IRQ)]),
    "bad-opcode": queue_run(0, [desc(9)]),
    "two-queues": queue_run(0, [desc(FILL, DST_VRAM, 1, 0, 1 << 20)]) +
                  queue_run(1, [desc(COPY, SRC_VRAM, 0, DATA, 1 << 20)]),
    "to-a-bar": queue_run(0, [desc(COPY, SRC_VRAM, 0, 0xE0000000, 64),
                              desc(COPY, SRC_VRAM, 0, 0xE3000000, 4096)]),
}


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, ops in SEEDS.items():
        (out / f"seed-{name}").write_bytes(SEPARATOR.join(ops))


if __name__ == "__main__":
    main()
