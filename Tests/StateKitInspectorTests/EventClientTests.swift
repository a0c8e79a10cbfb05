import Foundation
import StateKit
import Testing

@testable import StateKitInspector

/// The event stream over real sockets: delivery, and a page that never reads.
@Suite(.serialized) struct EventClientTests {
    private func eventsRequest(_ inspector: StateInspector) -> String {
        let token = URLComponents(url: inspector.url, resolvingAgainstBaseURL: false)!.queryItems!.first!.value!
        return "GET /events?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    }

    @Test func theEventStreamDeliversAChangeWithinASecond() throws {
        let key = uniqueKey("count")
        let count = MonitoredState(0, key: key)
        let inspector = try StateInspector.start()
        defer { inspector.stop() }
        let page = try RawHTTPClient(port: inspector.port)
        page.send(eventsRequest(inspector))
        #expect(eventually { inspector.server.sampler.clients.count == 1 })
        // The page's first reading of the containers is taken when it connects.
        #expect(eventually { count.version == 0 })
        let written = Date()
        count.modify(42)
        let isDelivered = page.read(until: #""key":"\#(key)""#, deadline: written.addingTimeInterval(1))
        #expect(isDelivered, "the change reached the page within a second")
    }

    @Test func aPageThatNeverReadsDoesNotSlowWritersAndItsBufferStaysBounded() throws {
        let containers = (0..<40).map { MonitoredState("", key: uniqueKey("big-\($0)")) }
        let inspector = try StateInspector.start()
        defer { inspector.stop() }
        let page = try RawHTTPClient(port: inspector.port, receiveBuffer: 4096)
        page.send(eventsRequest(inspector))
        #expect(eventually { inspector.server.sampler.clients.count == 1 })
        let client = try #require(inspector.server.sampler.clients.first)
        let filler = String(repeating: "x", count: 8_000)
        var slowest: TimeInterval = 0
        var mostWaiting = 0
        let deadline = Date().addingTimeInterval(20)
        var round = 0
        // Every round changes each container, so each reading is 40 events of about 16 KB: the
        // page's socket fills, then its buffer, which is emptied into a gap, again and again.
        while client.gapCount < 3 && Date() < deadline {
            round += 1
            for container in containers {
                let started = Date()
                container.modify("\(round)" + filler)
                slowest = max(slowest, Date().timeIntervalSince(started))
            }
            mostWaiting = max(mostWaiting, client.waitingCount)
            usleep(10_000)
        }
        #expect(client.gapCount >= 3, "the stalled page's buffer overflowed into gaps")
        #expect(mostWaiting <= EventClient.capacity)
        #expect(client.waitingCount <= EventClient.capacity)
        // A write into a container whose only audience is the tally takes microseconds; a write
        // that waited for the page would take until the test ends.
        #expect(slowest < 0.5, "slowest write took \(slowest) s")
        withExtendedLifetime(page) {}
    }
}
