import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

/// Three network namespaces, one per etcd member, so that a member can be cut off from its peers while the machines
/// (in the test's namespace) still reach it: a partition, which loopback alone cannot make.
///
/// Each member's namespace has a client link to the host (`10.218.<b>.<4k+2>`, the host end `.<4k+1>`) and one
/// link to each other member's namespace; its peer address (`10.221.<b>.<k+1>`) sits on its loopback and is routed
/// over those links. Cutting member `k` takes its peer links down; its client link stays up. Namespaces are named
/// `i18f-<test process id>-…` and the host ends of the client links `i18f<random>c<k>`; deleting a namespace deletes
/// its links with their host ends, when the value is released (and, for a test process that
/// crashed, when the next one starts).
///
/// ```swift
/// let network = try IsolatedNetwork()
/// let cluster = try await EtcdCluster.start(etcd: etcd, network: network)
/// try network.cut(2)
/// ```
final class IsolatedNetwork: @unchecked Sendable {
	struct Unavailable: Error, CustomStringConvertible {
		let description: String
	}

	static let ip = "/usr/sbin/ip"
	private static let prefix = "i18f-"

	let namespaces: [String]
	/// The host ends of the client links.
	private let hostEnds: [String]
	/// The client and the peer address of each member.
	let memberAddresses: [(client: String, peer: String)]
	/// The third byte of every address here: a block no other link on the machine uses.
	private let block: Int
	private var isRemoved = false

	/// Whether namespaces can be made here (root, `ip`, a kernel that allows them); probed once.
	static let isAvailable: Bool = {
		guard let network = try? IsolatedNetwork() else {
			return false
		}
		network.remove()
		return true
	}()

	init() throws {
		Self.removeLeftovers()
		let token = "\(getpid())-\(UInt16.random(in: 0...UInt16.max))"
		// A block of client addresses no link here uses (a namespace deleted a moment ago may still hold one).
		let used = (try? Self.run(["-o", "addr", "show"])) ?? ""
		let block = (1...254).shuffled().first { !used.contains("10.218.\($0).") } ?? 1
		self.block = block
		let linkToken = String(UInt32.random(in: 0...0xFF_FFFF), radix: 16)
		hostEnds = (0..<3).map { "i18f\(linkToken)c\($0)" }
		namespaces = (0..<3).map { "\(Self.prefix)\(token)-m\($0)" }
		memberAddresses = (0..<3).map { ("10.218.\(block).\(4 * $0 + 2)", "10.221.\(block).\($0 + 1)") }
		do {
			for (index, namespace) in namespaces.enumerated() {
				try Self.run(["netns", "add", namespace])
				try Self.run(["-n", namespace, "link", "set", "lo", "up"])
				try Self.run(["-n", namespace, "addr", "add", "\(memberAddresses[index].peer)/32", "dev", "lo"])
				// The client link: its host end named uniquely here, its other end `c` inside the namespace.
				let hostEnd = hostEnds[index]
				try Self.run(["link", "add", hostEnd, "type", "veth", "peer", "name", "c", "netns", namespace])
				try Self.run(["addr", "add", "10.218.\(block).\(4 * index + 1)/30", "dev", hostEnd])
				try Self.run(["link", "set", hostEnd, "up"])
				try Self.run(["-n", namespace, "addr", "add", "\(memberAddresses[index].client)/30", "dev", "c"])
				try Self.run(["-n", namespace, "link", "set", "c", "up"])
			}
			for (pair, (first, second)) in Self.pairs.enumerated() {
				try peerLink(first, second, block: block, pair: pair)
			}
		} catch {
			remove()
			throw error
		}
	}

	/// The members each peer link joins, in the order of their address blocks.
	private static let pairs = [(0, 1), (0, 2), (1, 2)]

	/// The address of member `member`'s end of its peer link to member `other`.
	private func peerLinkAddress(of member: Int, towards other: Int) -> String {
		let pair = Self.pairs.firstIndex { $0 == (min(member, other), max(member, other)) } ?? 0
		return "10.220.\(block).\(4 * pair + (member < other ? 1 : 2))"
	}

	private func peerLink(_ first: Int, _ second: Int, block: Int, pair: Int) throws {
		let (one, other) = (namespaces[first], namespaces[second])
		try Self.run([
			"-n", one, "link", "add", "p\(second)", "type", "veth", "peer", "name", "p\(first)", "netns", other,
		])
		try Self.run(["-n", one, "addr", "add", "10.220.\(block).\(4 * pair + 1)/30", "dev", "p\(second)"])
		try Self.run(["-n", other, "addr", "add", "10.220.\(block).\(4 * pair + 2)/30", "dev", "p\(first)"])
		try Self.run(["-n", one, "link", "set", "p\(second)", "up"])
		try Self.run(["-n", other, "link", "set", "p\(first)", "up"])
		try Self.run([
			"-n", one, "route", "add", "\(memberAddresses[second].peer)/32", "via", "10.220.\(block).\(4 * pair + 2)",
		])
		try Self.run([
			"-n", other, "route", "add", "\(memberAddresses[first].peer)/32", "via", "10.220.\(block).\(4 * pair + 1)",
		])
	}

	/// Cuts member `index` off from its peers; machines still reach it.
	func cut(_ index: Int) throws {
		for other in 0..<3 where other != index {
			try Self.run(["-n", namespaces[index], "link", "set", "p\(other)", "down"])
		}
	}

	/// Joins member `index` to its peers again. Taking a link down deletes the routes through it, and taking it up
	/// brings back only the link's own subnet: without the routes to the peers' addresses put back, the member stayed
	/// cut off after the "heal" (it could not answer its peers), the cluster never had it back, and a read of it
	/// failed (the member-cut-off scenario's "etcd did not answer a read", and its heals that took 49 s).
	func heal(_ index: Int) throws {
		for other in 0..<3 where other != index {
			try Self.run(["-n", namespaces[index], "link", "set", "p\(other)", "up"])
			try Self.run([
				"-n", namespaces[index], "route", "replace", "\(memberAddresses[other].peer)/32", "via",
				peerLinkAddress(of: other, towards: index), "dev", "p\(other)",
			])
		}
	}

	/// Deleting a namespace deletes the links in it, and with them their other ends.
	func remove() {
		guard !isRemoved else {
			return
		}
		isRemoved = true
		// A namespace outlives its deletion while sockets of its killed processes wind down (a minute or two);
		// deleting the host ends at once leaves nothing of it in the test's namespace meanwhile.
		for hostEnd in hostEnds {
			_ = try? Self.run(["link", "del", hostEnd])
		}
		for namespace in namespaces {
			_ = try? Self.run(["netns", "del", namespace])
		}
	}

	deinit {
		remove()
	}

	/// Namespaces a test process that is gone left behind.
	private static func removeLeftovers() {
		guard let list = try? run(["netns", "list"]) else {
			return
		}
		for line in list.split(separator: "\n") {
			let name = String(line.split(separator: " ").first ?? "")
			guard name.hasPrefix(prefix), let owner = Int32(name.dropFirst(prefix.count).prefix { $0 != "-" }),
				owner != getpid(), Foundation.kill(owner, 0) != 0
			else {
				continue
			}
			_ = try? run(["netns", "del", name])
		}
	}

	@discardableResult
	private static func run(_ arguments: [String]) throws -> String {
		guard FileManager.default.isExecutableFile(atPath: ip) else {
			throw Unavailable(description: "\(ip) is missing")
		}
		let result = try ChildProcess.run(arguments, executable: ip, timeout: 10)
		guard result.status == 0, !result.wasSignaled else {
			throw Unavailable(description: "ip \(arguments.joined(separator: " ")) failed: \(result.standardError)")
		}
		return result.standardOutput
	}
}
