import Foundation
import StateKit

/// A remote-sync sink over an in-memory "server" (a value and a counter as its validator): it
/// sends the container's newest value when its record says unsent, records each agreement, and
/// can be taken offline. Enough to check what ``SyncedState`` promises any remote sink; the
/// HTTP sink's own promises are checked against real servers.
final class TestRemoteSink<Value: Sendable & Codable & Equatable>: RemoteSyncSink, @unchecked Sendable {
    let policy: SinkPolicy
    let destination: String?
    private let lock = NSLock()
    private var channel: RemoteChannel<Value>?
    private var serverValue: Value?
    private var serverVersion = 0
    private var sentValues: [Value] = []
    private var received: [StateChange<Value>] = []
    private var isOffline: Bool
    private var unconnectedSends = 0
    private let connectDelay: Duration

    struct Offline: Error {}

    /// - Parameters:
    ///   - connectDelay: How long ``connect(_:)`` takes: time for a pipeline that was started too
    ///     early to send first.
    ///   - destination: The sink's ``RemoteSyncSink/destination``.
    init(offline: Bool = false, server: Value? = nil, connectDelay: Duration = .zero, destination: String? = nil) {
        self.connectDelay = connectDelay
        self.destination = destination
        var policy = SinkPolicy.latestValue
        policy.retry = RetryPolicy(initialDelay: .milliseconds(1), maximumDelay: .milliseconds(5), maximumAttempts: 2)
        policy.afterRepeatedFailures = .pauseAndKeep(retryEvery: .milliseconds(20))
        self.policy = policy
        self.isOffline = offline
        self.serverValue = server
        self.serverVersion = server == nil ? 0 : 1
    }

    func connect(_ channel: RemoteChannel<Value>) {
        if connectDelay > .zero {
            let (seconds, attoseconds) = connectDelay.components
            Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
        }
        lock.withLock { self.channel = channel }
    }

    var connectedChannel: RemoteChannel<Value>? { lock.withLock { channel } }
    var sent: [Value] { lock.withLock { sentValues } }
    var changes: [StateChange<Value>] { lock.withLock { received } }
    var server: Value? { lock.withLock { serverValue } }
    /// Sends that came before ``connect(_:)``: a remote sink that cannot know its record yet.
    var sendsBeforeConnect: Int { lock.withLock { unconnectedSends } }

    func setOffline(_ offline: Bool) {
        lock.withLock { isOffline = offline }
    }

    func send(_ changes: [StateChange<Value>]) async throws {
        let (channel, offline) = lock.withLock {
            received += changes
            if self.channel == nil { unconnectedSends += 1 }
            return (self.channel, isOffline)
        }
        if offline { throw Offline() }
        guard let channel, channel.syncRecord.hasUnsentChanges, let current = channel.current else { return }
        let validator = lock.withLock {
            serverValue = current.value
            serverVersion += 1
            sentValues.append(current.value)
            return "v\(serverVersion)"
        }
        channel.recordAgreement(
            base: try JSONEncoder().encode(current.value), validator: validator, atVersion: current.version)
    }

    func refresh() async throws {
        let (channel, value) = lock.withLock { (self.channel, serverValue) }
        guard let channel, let value else { return }
        channel.applyRemote(value)
    }

    /// Another device writes `value` to the "server".
    func serverWrites(_ value: Value) {
        lock.withLock {
            serverValue = value
            serverVersion += 1
        }
    }
}
