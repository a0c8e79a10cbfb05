import Dispatch
import Foundation
import StateKit

/// Finds the changes of every container while a page is open and sends them to the open pages.
///
/// While at least one page listens, the registry's change tallies are on (see
/// ``StateKit/InspectionRegistry/beginCounting()``), and a thread of the sampler reads every container
/// ``interval`` apart: each one whose version moved becomes one `change` event, with the origins
/// its tally counted and its value before and after. Several changes between two readings are
/// one event (its `from` version tells how many). When the last page leaves, the tallies are
/// turned off and the sampler forgets the values it knew.
///
/// - Note: All operations on `ChangeSampler` are thread-safe.
final class ChangeSampler: Sendable {
    /// What the sampler's lock guards. It is taken before the registry's and a container's.
    private struct Books: Sendable {
        /// A container's version and value as the last reading found them.
        struct Known: Sendable {
            let version: UInt64
            let value: RenderedValue
        }

        var clients: [EventClient] = []
        var known: [ObjectIdentifier: Known] = [:]
        /// The last change events, replayed to a page that opens.
        var recent: [Data] = []
        var isStopped = false
    }

    /// How long the sampler waits between two readings.
    static let interval: DispatchTimeInterval = .milliseconds(50)
    /// How many change events a page that opens is sent first.
    static let replayCount = 200

    private let registry: InspectionRegistry
    private let books = LockedBox(Books())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(registry: InspectionRegistry = .shared) {
        self.registry = registry
    }

    /// Starts the sampling thread.
    func run() {
        let thread = Thread { [self] in
            while books.withLock({ !$0.isStopped }) {
                _ = wake.wait(timeout: .now() + Self.interval)
                sample()
            }
            finished.signal()
        }
        thread.name = "StateKitInspector.sampler"
        thread.start()
    }

    /// Stops the sampling thread and closes every page's stream; returns once the thread ended.
    func stop() {
        let clients = books.withLock { books in
            defer { books.clients = [] }
            let isFirstStop = !books.isStopped
            books.isStopped = true
            if isFirstStop && !books.clients.isEmpty { registry.endCounting() }
            return isFirstStop ? books.clients : nil
        }
        guard let clients else { return }
        for client in clients { client.close() }
        wake.signal()
        finished.wait()
    }

    /// Adds a page's stream; the first one turns the tallies on. Returns the events to replay to it,
    /// or `nil` when the sampler has stopped.
    func add(_ client: EventClient) -> [Data]? {
        books.withLock { books in
            guard !books.isStopped else { return nil }
            if books.clients.isEmpty {
                registry.beginCounting()
                books.known = [:]
                for container in registry.handles {
                    guard let reading = container.readTally(clearing: true) else { continue }
                    books.known[container.cellIdentity] = .init(
                        version: reading.version, value: RenderedValue(reading.value))
                }
            }
            books.clients.append(client)
            return books.recent
        }
    }

    /// Removes a page's stream; the last one turns the tallies off.
    func remove(_ client: EventClient) {
        books.withLock { books in
            guard let index = books.clients.firstIndex(where: { $0 === client }) else { return }
            books.clients.remove(at: index)
            if books.clients.isEmpty && !books.isStopped {
                registry.endCounting()
                books.known = [:]
            }
        }
    }

    /// Reads every container once and sends what changed to every page.
    private func sample() {
        books.withLock { books in
            guard !books.clients.isEmpty, !books.isStopped else { return }
            var live = Set<ObjectIdentifier>()
            for container in registry.handles where live.insert(container.cellIdentity).inserted {
                guard let reading = container.readTally(clearing: true) else { continue }
                let known = books.known[container.cellIdentity]
                guard known?.version != reading.version else { continue }
                let value = RenderedValue(reading.value)
                books.known[container.cellIdentity] = .init(version: reading.version, value: value)
                let event = Self.event(
                    for: container, reading: reading, before: known, after: value)
                books.recent.append(event)
                if books.recent.count > Self.replayCount { books.recent.removeFirst() }
                for client in books.clients { client.send(event) }
            }
            books.known = books.known.filter { live.contains($0.key) }
        }
    }

    private struct ChangeEvent: Encodable {
        let time: Date
        let id: String
        let key: String
        let version: UInt64
        let from: UInt64?
        let origin: String
        let origins: [String]
        let old: String?
        let new: String
        let isJSON: Bool
    }

    private static func event(
        for container: InspectionHandle, reading: TallyReading, before: Books.Known?, after: RenderedValue
    ) -> Data {
        let change = ChangeEvent(
            time: Date(), id: InspectorSnapshot.identifier(of: container), key: container.key,
            version: reading.version, from: before?.version, origin: (reading.lastOrigin ?? .local).rawValue,
            origins: reading.origins.map(\.rawValue), old: before?.value.text, new: after.text, isJSON: after.isJSON)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        let json = (try? encoder.encode(change)) ?? Data("{}".utf8)
        return Data("event: change\ndata: ".utf8) + json + Data("\n\n".utf8)
    }
}
