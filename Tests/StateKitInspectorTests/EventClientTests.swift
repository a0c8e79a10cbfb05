import Foundation
import Testing

@testable import StateKitInspector

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The event stream of another program's inspector, over real sockets: delivery, and a page that
/// never reads.
@Suite struct EventClientTests {
    private static func eventsRequest(_ fixture: InspectorFixtureProcess) -> String {
        "GET /events?token=\(fixture.token) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    }

    @Test func theEventStreamDeliversAChangeWithinASecond() async throws {
        let (isOpen, isDelivered) = try await offThePool {
            let fixture = try InspectorFixtureProcess()
            let page = try RawHTTPClient(port: fixture.port)
            page.send(Self.eventsRequest(fixture))
            let isOpen = page.read(until: "\r\n\r\n", deadline: Date().addingTimeInterval(30))
            // The page's first reading of the containers is taken when it connects.
            usleep(200_000)
            let written = Date()
            fixture.send("title Sent")
            return (isOpen, page.read(until: #""key":"title""#, deadline: written.addingTimeInterval(1)))
        }
        #expect(isOpen, "the stream opened")
        #expect(isDelivered, "the change reached the page within a second")
    }

    /// Each round changes 40 containers of 8 KB: the page's socket fills, then its buffer, which
    /// is dropped for a gap, again and again; the program's writes never wait for the page.
    @Test func aPageThatNeverReadsDoesNotSlowWritersAndIsToldOfTheGap() async throws {
        let (isOpen, stalled, isToldOfGap) = try await offThePool {
            let fixture = try InspectorFixtureProcess()
            let page = try RawHTTPClient(port: fixture.port, receiveBuffer: 4096)
            page.send(Self.eventsRequest(fixture))
            let isOpen = page.read(until: "\r\n\r\n", deadline: Date().addingTimeInterval(30))
            let stalled = fixture.send("stall 100").first { $0.hasPrefix("stalled ") }
            return (isOpen, stalled, page.read(until: "event: gap", deadline: Date().addingTimeInterval(30)))
        }
        #expect(isOpen, "the stream opened")
        let slowest = try #require(stalled.flatMap { Double($0.dropFirst("stalled ".count)) })
        // A write whose only audience is the tally takes microseconds; one that waited for the
        // page would take until the test ends.
        #expect(slowest < 0.5, "slowest write took \(slowest) s")
        #expect(isToldOfGap, "the page was told of a gap")
    }

    /// A page's buffer, filled 1,000 times with nobody writing it out: it never holds more than
    /// its capacity, and each time it is full it is dropped for one gap.
    @Test func aPagesBufferNeverHoldsMoreThanItsCapacity() throws {
        var descriptors: [Int32] = [0, 0]
        #if canImport(Glibc)
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &descriptors) == 0)
        #else
        #expect(socketpair(AF_UNIX, SOCK_STREAM, 0, &descriptors) == 0)
        #endif
        defer { close(descriptors[1]) }
        let connection = Connection(descriptor: descriptors[0])
        defer { connection.close() }
        let client = EventClient(connection: connection)
        var mostWaiting = 0
        for index in 0..<1_000 {
            client.send(Data("event: change\ndata: \(index)\n\n".utf8))
            mostWaiting = max(mostWaiting, client.waitingCount)
        }
        #expect(mostWaiting == EventClient.capacity)
        #expect(client.gapCount == 1_000 / (EventClient.capacity + 1))
    }
}
