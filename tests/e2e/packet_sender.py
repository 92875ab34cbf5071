#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Sends UDP-in-Ethernet frames out of an interface at a fixed rate, for a
bounded time: traffic for a zeek (or the test double) reading the other end
of a veth pair, inside a network namespace the test made.

    packet_sender.py IFACE RATE SECONDS

Prints the number of frames sent."""
import socket
import struct
import sys
import time


def frame(seq):
    payload = struct.pack("!Q", seq) + b"zeek-spy load test " * 8
    udp = struct.pack("!HHHH", 40000 + seq % 1000, 53, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), seq & 0xFFFF, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    eth = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00"
    return eth + ip + udp


def main():
    iface, rate, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    start = time.monotonic()
    sent = 0
    while True:
        now = time.monotonic()
        if now - start >= seconds:
            break
        due = int((now - start) * rate) + 1
        while sent < due:
            s.send(frame(sent))
            sent += 1
        time.sleep(max(0.0, start + sent / rate - time.monotonic()))
    print(sent)


if __name__ == "__main__":
    main()
