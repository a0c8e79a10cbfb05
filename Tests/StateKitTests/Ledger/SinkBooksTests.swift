import Foundation
import Testing

@testable import StateKit

/// A sink's books in its cell's ledger: each transition of their table without a pipeline, the
/// status read from the ledger with the save error, and books that go with their pipelines (the
/// pipelines' suites check the books through real sends, failures and pauses).
@Suite struct SinkBooksTests {
    private struct Down: Error {}

    @Test func aDeliveryEndsTheFailureThePauseAndTheRetryItFollowed() {
        var books = SinkBooks(sinkName: "server")
        books.failed("HTTP 503", at: .now)
        books.retryDue(at: Date(timeIntervalSinceNow: 5))
        let isNew = books.paused()
        let isNewAgain = books.paused()
        #expect(isNew && !isNewAgain, "a pause is new once")
        var statistics = books.statistics(pending: 2)
        #expect(statistics.lastError == "HTTP 503" && statistics.isPaused && statistics.retryAt != nil)
        #expect(statistics.retried == 1 && statistics.pending == 2 && statistics.sinkName == "server")
        let now = Date()
        let wasPaused = books.delivered(1...2, count: 2, at: now)
        #expect(wasPaused, "it was paused until now")
        statistics = books.statistics(pending: 0)
        #expect(statistics.lastError == nil && !statistics.isPaused && statistics.retryAt == nil)
        #expect(statistics.sent == 2 && statistics.lastDeliveredAt == now && books.lastFailedAt == nil)
    }

    @Test func aLoadsErrorNeverHidesASendsAndALoadThatSucceedsClearsOnlyALoads() {
        var books = SinkBooks(sinkName: "server")
        books.awaitFirstContact()
        books.loadFailed("connection refused", at: .now)
        #expect(books.lastError == "connection refused")
        books.destinationAnswered()
        #expect(books.lastError == nil && !books.statistics(pending: 0).isAwaitingFirstContact)

        books.failed("HTTP 500", at: .now)
        books.loadFailed("connection refused", at: .now)
        #expect(books.lastError == "HTTP 500", "the send is the one a retry is about")
        books.destinationAnswered()
        #expect(books.lastError == "HTTP 500", "only a send that succeeds clears a send's error")
    }

    @Test func everyChangeASinkDidNotDeliverIsCountedOnceWithItsFate() {
        var books = SinkBooks(sinkName: "analytics")
        books.overflowed(.dropped(version: 3, reason: "full"))
        books.overflowed(.coalesced(count: 2))
        books.coalesced(4...5)
        books.gaveUp(6...7, count: 2, as: .rejected(reason: "refused"))
        _ = books.superseded(8...8, count: 1, because: "the server's value", at: Date())
        let statistics = books.statistics(pending: 0)
        #expect(statistics.dropped == 1 && statistics.coalesced == 3 && statistics.failed == 2 && statistics.sent == 0)
        #expect(books.outcomes.entry(of: 3)?.fate == .discarded(reason: "full"))
        #expect(books.outcomes.entry(of: 5)?.fate == .coalesced)
        #expect(books.outcomes.entry(of: 7)?.fate == .rejected(reason: "refused"))
        #expect(books.outcomes.entry(of: 8)?.fate == .discarded(reason: "the server's value"))
        books.stopped(undeliveredFrom: 9)
        #expect(books.undeliveredFrom == 9 && books.statistics(pending: 0).retryAt == nil)
    }

    @Test func theStatusReadsEverySinksBooksAndTheSaveErrorFromTheLedger() {
        var ledger = CellLedger(savesValue: true)
        let server = ledger.openBooks(SinkBooks(sinkName: "server"))
        let analytics = ledger.openBooks(SinkBooks(sinkName: "analytics"))
        ledger.books(server) { $0.failed("HTTP 503", at: .now) }
        _ = ledger.saveFailed(CocoaError(.fileWriteOutOfSpace))
        let status = ledger.syncStatus(of: [(server, 3), (analytics, 1)])
        #expect(status.sinks.map(\.sinkName) == ["server", "analytics"], "in the order the sinks were given")
        #expect(status.pending == 3 && status.lastError == "HTTP 503" && status.saveError != nil && !status.isSynced)

        ledger.closeBooks(server)
        #expect(ledger.openBookCount == 1)
        let again = ledger.openBooks(SinkBooks(sinkName: "other"))
        #expect(again == server, "a gone pipeline's slot is used again")
        #expect(ledger.statistics(of: again, pending: 0).lastError == nil, "with books of its own")
    }

    /// 200 short-lived persisted containers of one key, each with a sink of its own: the cell's
    /// ledger keeps the books of the live pipelines only.
    @Test func releasedContainersTakeTheirBooksWithThem() async throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let live = SyncedState(0, key: key, storage: storage, sinks: [ClosureSink<Int> { _ in }])
        for _ in 0..<200 {
            let other = SyncedState(0, key: key, storage: storage, sinks: [ClosureSink<Int> { _ in }])
            other.modify { $0 += 1 }
            #expect(await other.flush(timeout: .seconds(60)))
        }
        #expect(live.value == 200)
        let cell = try #require(live.persistence)
        await eventually("the released containers' pipelines are gone") {
            cell.withLedger { $0.openBookCount } == 1
        }
        #expect(await live.flush(timeout: .seconds(60)))
        #expect(live.statistics[0].sent == 200, "the live container's own books")
    }
}
