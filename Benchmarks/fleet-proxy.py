#!/usr/bin/env python3
"""A TCP relay that can be cut: the partition of the fleet benchmark (`Fleet`, Docs/Performance.md "Sync at fleet
scale"). Usage: fleet-proxy.py LISTEN_PORT:TARGET_PORT ... (loopback). SIGUSR1 cuts, SIGUSR2 heals.

While cut, nothing crosses in either direction: bytes already sent wait in the sockets' buffers and new connections
are accepted but not joined to the target, which is what a partition looks like to both ends while TCP's own timers
have not given up (a 10 s partition is shorter than them). On heal, everything waiting goes through, in order. So
both ends find out only through their own timeouts: the client's request timeout and its watch check."""
import asyncio
import signal
import sys

open_ = asyncio.Event()


async def pump(reader, writer):
    try:
        while True:
            await open_.wait()
            data = await reader.read(65536)
            if not data:
                break
            # A read that straddles the cut is held until the heal.
            await open_.wait()
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


def relay(target):
    async def handle(client_reader, client_writer):
        await open_.wait()
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, server_writer), pump(server_reader, client_writer))

    return handle


async def main():
    open_.set()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, open_.clear)
    loop.add_signal_handler(signal.SIGUSR2, open_.set)
    servers = []
    for pair in sys.argv[1:]:
        listen, target = (int(part) for part in pair.split(":"))
        servers.append(await asyncio.start_server(relay(target), "127.0.0.1", listen, backlog=4096))
    print("ready", flush=True)
    await asyncio.Event().wait()


asyncio.run(main())
