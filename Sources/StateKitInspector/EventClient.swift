import Dispatch
import Foundation
import StateKit

/// One open page's event stream: a bounded buffer of Server-Sent Events and the thread that
/// writes them to the page's connection.
///
/// The sampler appends without waiting: when the buffer is full (the page reads slower than the
/// app changes), the buffer is emptied and the page is sent a `gap` event, after which it reloads
/// the newest state. A page that stops reading blocks only its own writer thread.
///
/// - Note: All operations on `EventClient` are thread-safe.
final class EventClient: Sendable {
    /// What the client's lock guards.
    private struct Buffer {
        var events: [Data] = []
        var hasGap = false
        var gapCount = 0
        var isClosed = false
    }

    /// The most events a page may have waiting before it is told it missed some.
    static let capacity = 256

    let connection: Connection
    private let buffer = LockedBox(Buffer())
    /// Signalled once per event appended, and to wake the writer when closing.
    private let ready = DispatchSemaphore(value: 0)

    init(connection: Connection) {
        self.connection = connection
    }

    /// How many events wait to be written.
    var waitingCount: Int {
        buffer.withLock { $0.events.count }
    }

    /// How many times the buffer was full and emptied: the page missed changes that many times.
    var gapCount: Int {
        buffer.withLock { $0.gapCount }
    }

    /// Queues `event` for the page, or, when the buffer is full, drops the buffer and marks a gap.
    func send(_ event: Data) {
        let isQueued = buffer.withLock { buffer in
            guard !buffer.isClosed else { return false }
            if buffer.events.count >= Self.capacity {
                buffer.events.removeAll(keepingCapacity: true)
                buffer.hasGap = true
                buffer.gapCount += 1
                return true
            }
            buffer.events.append(event)
            return true
        }
        if isQueued { ready.signal() }
    }

    /// Stops the writer: the connection is shut down, which wakes a writer blocked on a page that
    /// does not read.
    func close() {
        buffer.withLock { $0.isClosed = true }
        connection.shutDown()
        ready.signal()
    }

    /// Writes the stream's head and `replay`, then events as they come, until the page goes away
    /// or ``close()`` is called. Sends a comment every 5 seconds of silence, to notice a page that
    /// was closed. Runs on the connection's own thread.
    func writeEvents(replaying replay: [Data]) {
        var head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
        head += "Connection: close\r\nX-Accel-Buffering: no\r\n\r\nretry: 1000\n\n"
        guard connection.write(Data(head.utf8)), replay.allSatisfy({ connection.write($0) }) else { return }
        while true {
            let isSilent = ready.wait(timeout: .now() + 5) == .timedOut
            let (events, hasGap, isClosed) = buffer.withLock { buffer in
                defer {
                    buffer.events.removeAll(keepingCapacity: true)
                    buffer.hasGap = false
                }
                return (buffer.events, buffer.hasGap, buffer.isClosed)
            }
            if isClosed { return }
            if hasGap, !connection.write(Data("event: gap\ndata: {}\n\n".utf8)) { return }
            for event in events where !connection.write(event) { return }
            if isSilent, events.isEmpty, !hasGap, !connection.write(Data(": ping\n\n".utf8)) { return }
        }
    }
}
