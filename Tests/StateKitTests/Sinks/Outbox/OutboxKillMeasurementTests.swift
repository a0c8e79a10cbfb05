import Foundation
import StateKit
import Testing

/// The durable outbox under repeated `kill -9` with a lagging sink and the default buffer: every
/// logged change is delivered, in order, duplicates only under their own idempotency key.
///
/// Each run starts `statekit-sinks-helper outbox-lagging` over the same log, which delivers what
/// the previous run left, writes 12,000 changes at once (beyond the 10,000-change buffer) and
/// then one every 10 ms, and kills it at a random moment. A last run delivers the rest. CI runs
/// a few; set `STATEKIT_OUTBOX_KILL_RUNS=100` for the full measurement (figures on standard output;
/// about 10 minutes on a 2-core machine, with the helper built in release and named by
/// `STATEKIT_SINKS_HELPER`).
@Suite(.timeLimit(.minutes(20))) struct OutboxKillMeasurementTests {
    struct Figures: CustomStringConvertible {
        var runs = 0
        var logged = 0
        var delivered = 0
        var lost = 0
        var outOfOrder = 0
        var duplicates = 0
        var keysReused = 0

        var description: String {
            "\(runs) kill -9 runs: logged \(logged), delivered \(delivered), lost \(lost), out of order "
                + "\(outOfOrder), duplicates \(duplicates) (same idempotency key; keys reused for another change: "
                + "\(keysReused))"
        }
    }

    @Test func killedWritersWithALaggingSinkLoseNothingAndKeepOrder() async throws {
        let runs = Int(ProcessInfo.processInfo.environment["STATEKIT_OUTBOX_KILL_RUNS"] ?? "") ?? 5
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "state.outbox")
        let events = directory.url.appending(path: "events.jsonl")
        let key = uniqueKey()

        for _ in 0..<runs {
            let writer = try await SinksHelper.launch(["outbox-lagging", log.path, key, events.path])
            #expect(writer.firstLine.hasPrefix("started "))
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...1_200)))
            await writer.kill()
            #expect(writer.process.terminationReason == .uncaughtSignal)
        }
        let drainer = try await SinksHelper.launch(["outbox-drain", log.path, key, events.path])
        await drainer.waitForExit()
        let logged = try #require(Int(drainer.firstLine.split(separator: " ").last ?? ""))

        let figures = measure(events: events, logged: logged, runs: runs, key: key)
        print("OutboxKillMeasurement:", figures)
        #expect(figures.logged > 12_000)
        #expect(figures.lost == 0)
        #expect(figures.outOfOrder == 0)
        #expect(figures.keysReused == 0)
        #expect(figures.delivered == figures.logged)
    }

    /// Reads the delivered events (skipping a line torn by a kill: its batch was not acknowledged,
    /// so it was delivered again).
    private func measure(events: URL, logged: Int, runs: Int, key: String) -> Figures {
        var figures = Figures(runs: runs, logged: logged)
        let data = (try? Data(contentsOf: events)) ?? Data()
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        var seen = Set<Int>()
        var highest = 0
        for line in data.split(separator: 0x0A) {
            guard let event = try? decoder.decode(AnalyticsEvent.self, from: Data(line)),
                let version = Int(event.properties["version"] ?? ""), let value = event.properties["value"]
            else { continue }
            if event.idempotencyKey != "\(key)#\(version)" || value != String(version) { figures.keysReused += 1 }
            if !seen.insert(version).inserted {
                figures.duplicates += 1
                continue
            }
            if version < highest { figures.outOfOrder += 1 }
            highest = max(highest, version)
        }
        figures.delivered = seen.filter { $0 <= logged }.count
        figures.lost = (1...max(1, logged)).filter { !seen.contains($0) }.count
        return figures
    }
}
