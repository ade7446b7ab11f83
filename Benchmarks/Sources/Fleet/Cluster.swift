import EtcdSupport
import Foundation

#if canImport(Glibc)
	import Glibc
#endif

/// The three etcd members of a fleet run (`EtcdMembers`: each its own process and data folder on loopback ports,
/// stopped by process id), and the relay that cuts a third of the fleet off (`fleet-proxy.py`).
final class FleetCluster {
	let members: EtcdMembers
	let relayPorts: [Int]
	private(set) var relay: Process?

	var endpoints: [String] { members.endpoints }
	/// The same members through the relay.
	var relayedEndpoints: [String] { relayPorts.map { "http://127.0.0.1:\($0)" } }

	init(etcd: String, folder: URL, relayScript: String) throws {
		let members = try EtcdMembers(count: 3, name: "f", folder: folder.appending(path: "etcd"), etcd: etcd)
		self.members = members
		relayPorts = (0..<3).map { members.nextFreePort + $0 }
		let relay = Process()
		relay.executableURL = URL(filePath: "/usr/bin/python3")
		relay.arguments = [relayScript] + (0..<3).map { "\(relayPorts[$0]):\(members.clientPorts[$0])" }
		let output = Pipe()
		relay.standardOutput = output
		try relay.run()
		self.relay = relay
		let line = output.fileHandleForReading.availableLine()
		guard line == "ready" else {
			throw FleetError("the relay did not start: \(line ?? "no output")")
		}
		guard members.waitForLeader(within: 30) != nil else {
			throw FleetError("the etcd members agreed on no leader within 30 s")
		}
	}

	func cut() { kill(relay!.processIdentifier, SIGUSR1) }
	func heal() { kill(relay!.processIdentifier, SIGUSR2) }

	/// Every member's resident memory (KB), CPU time (clock ticks) and open descriptors.
	func usage() -> [(rss: Int, ticks: Int, descriptors: Int)] {
		members.clientPorts.indices.map { index in
			let pid = "\(members.processIdentifier(index) ?? 0)"
			return (
				residentKilobytes(of: pid).rss, cpuTicks(of: pid),
				(try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
			)
		}
	}

	/// A metric of etcd's `/metrics` (Prometheus text), summed over its labels, from member `index`.
	func metric(_ name: String, member index: Int) -> Double? {
		guard let text = curl(endpoints[index] + "/metrics", nil) else {
			return nil
		}
		var total: Double?
		for line in text.split(separator: "\n") where line.hasPrefix(name + " ") || line.hasPrefix(name + "{") {
			if let value = line.split(separator: " ").last.flatMap({ Double($0) }) {
				total = (total ?? 0) + value
			}
		}
		return total
	}

	func stop() {
		members.stop()
		if let relay, relay.isRunning {
			kill(relay.processIdentifier, SIGKILL)
			relay.waitUntilExit()
		}
	}
}

/// CPU time (user + system, in clock ticks) of a process, from `/proc/<pid>/stat`.
func cpuTicks(of pid: String) -> Int {
	guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
		let close = text.lastIndex(of: ")")
	else {
		return 0
	}
	// After the command's closing parenthesis: state is field 3, utime 14 and stime 15.
	let fields = text[text.index(after: close)...].split(separator: " ")
	return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
}

/// Sockets in TIME_WAIT on this machine (IPv4), from `/proc/net/tcp`.
func timeWaitSockets() -> Int {
	// Read to the end through a handle: `/proc` files have no size, and a read by size stops at the first page.
	guard let file = FileHandle(forReadingAtPath: "/proc/net/tcp") else {
		return 0
	}
	defer { try? file.close() }
	let text = String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
	return text.split(separator: "\n").dropFirst().count { line in
		let fields = line.split(separator: " ")
		return fields.count > 3 && fields[3] == "06"
	}
}

func loadAverage() -> String {
	((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3)
		.joined(separator: " ")
}

func curlJSON(_ url: String, _ body: String) -> [String: Any]? {
	curl(url, body).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
}

struct FleetError: Error, CustomStringConvertible {
	let description: String
	init(_ description: String) { self.description = description }
}

extension FileHandle {
	/// The next line, read a byte at a time (the child's replies are short), without its newline; `nil` at the end.
	func availableLine() -> String? {
		var bytes: [UInt8] = []
		var byte: UInt8 = 0
		while true {
			let count = Glibc.read(fileDescriptor, &byte, 1)
			if count <= 0 {
				return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
			}
			if byte == UInt8(ascii: "\n") {
				return String(decoding: bytes, as: UTF8.self)
			}
			bytes.append(byte)
		}
	}
}
