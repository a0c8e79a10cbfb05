import Foundation
import StateKit

// A child process for the durable outbox's crash test (see DurableOutboxTests):
//   statekit-sinks-helper outbox-write <log> <key> <count>
//     logs <count> changes through a DurableOutbox whose sink never finishes, prints
//     "wrote <count>", then waits to be killed.
//   statekit-sinks-helper outbox-deliver <log> <key> <events>
//     restarts over the same log with a sink that appends JSON lines to <events>, delivers what
//     the killed run left, makes one more change, prints "delivered <version>" and exits.
//   statekit-sinks-helper measure-modify - - <writes>
//     prints the writer's modify latency with no sink and with a sink that takes 200 ms per batch
//     (a measurement, not a test; build with -c release).

/// A sink that never returns, so nothing gets acknowledged before the kill.
struct StuckSink: StateSink {
    func send(_ changes: [StateChange<Int>]) async throws {
        try await Task.sleep(for: .seconds(3_600))
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 5 else {
    FileHandle.standardError.write(
        Data("usage: statekit-sinks-helper outbox-write|outbox-deliver <log> <key> <count|events>\n".utf8))
    exit(64)
}
let log = URL(fileURLWithPath: arguments[2])
let key = arguments[3]

switch arguments[1] {
case "outbox-write":
    let count = Int(arguments[4]) ?? 0
    let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: StuckSink()) }
    for value in 1...max(1, count) { state.modify(value) }
    FileHandle.standardOutput.write(Data("wrote \(count)\n".utf8))
    while true { sleep(60) }
case "outbox-deliver":
    let backend = JSONLinesAnalyticsBackend(fileURL: URL(fileURLWithPath: arguments[4]))
    let sink = AnalyticsSink<Int, JSONLinesAnalyticsBackend>(backend: backend) { change in
        AnalyticsEvent(name: "value", properties: ["value": String(change.newValue)])
    }
    let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: sink) }
    await state.flush()
    state.modify(-1)
    await state.flush()
    print("delivered \(state.version)")
case "measure-modify":
    await ModifyLatency.run(writes: Int(arguments[4]) ?? 100_000)
default:
    FileHandle.standardError.write(Data("unknown mode \(arguments[1])\n".utf8))
    exit(64)
}
