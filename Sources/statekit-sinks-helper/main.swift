import Foundation
import StateKit
import StateKitHTTP

// A child process for the durable outbox's crash test (see DurableOutboxTests):
//   statekit-sinks-helper outbox-write <log> <key> <count>
//     logs <count> changes through a DurableOutbox whose sink never finishes, prints
//     "wrote <count>", then waits to be killed.
//   statekit-sinks-helper outbox-deliver <log> <key> <events>
//     restarts over the same log with a sink that appends JSON lines to <events>, delivers what
//     the killed run left, makes one more change, prints "delivered <version>" and exits.
//   statekit-sinks-helper outbox-full-disk <log> <key> <bytes>
//     logs changes through a DurableOutbox with the file size limited to <bytes> (RLIMIT_FSIZE, as
//     a full disk: the append that crosses it is cut short), until the outbox reports the failed
//     append of version F; then lifts the limit, logs 10 more, prints "failed F <last>", and waits
//     to be killed.
//   statekit-sinks-helper outbox-full-disk-freed <log> <key> -
//     logs 1,000 changes through a DurableOutbox to a sink that takes them while the log may not
//     grow (RLIMIT_FSIZE at its size: every append fails, as on a full disk), then lifts the limit,
//     prints "freed <version>" and waits to be killed, writing nothing more.
//   statekit-sinks-helper outbox-full-disk-at-start <log> <key> -
//     as outbox-full-disk-freed, but no file may grow from the start (the log cannot be rewritten
//     as it is opened), and it logs 10 changes.
//   statekit-sinks-helper handler-writes <directory> <key> <shared|plain>
//     a persisted container in <directory> (shared across processes or not) whose storage breaks
//     after its first save, written five times with a diagnostics handler that writes to it at
//     each storage failure reported; prints "reports <count> value <value>" and exits.
//   statekit-sinks-helper handler-writes-outbox <log> <key> -
//     the same for a container behind an outbox whose log cannot grow (RLIMIT_FSIZE), with a
//     handler that writes at each failed append reported.
//   statekit-sinks-helper outbox-receipts <log> <key> <count>
//     writes <count> changes through a DurableOutbox named "picky" to a sink that refuses (for
//     good) every version divisible by 7 and takes the others, one a batch, until half of them
//     were written; from then on it holds every batch. Once the receipt of the last change of the
//     first half resolved, prints "settled <half> wrote <count>" and waits to be killed (see
//     ReceiptRelaunchTests).
//   statekit-sinks-helper outbox-saved-full-disk <log> <key> -
//     a container behind a DurableOutbox whose log cannot grow (RLIMIT_FSIZE at its size) writes
//     once and asks its receipt whether it is saved, waiting 1 s; then lifts the limit and asks
//     again, waiting 10 s; prints "saved <first> <second>" and exits (see ReceiptRelaunchTests).
//   statekit-sinks-helper outbox-lagging <log> <key> <events>
//     writes through a DurableOutbox with the default buffer (10,000) to a sink that appends JSON
//     lines to <events>, lagging: it starts 200 ms late, then takes 1 ms per batch. Prints
//     "started <version>", writes 12,000 changes at once (more than the buffer holds), then one
//     every 10 ms until killed (see OutboxKillMeasurementTests).
//   statekit-sinks-helper outbox-drain <log> <key> <events>
//     delivers what the log holds to <events> at full speed, prints "logged <version>" and exits.
//   statekit-sinks-helper idempotency-keys - <key> <count>
//     makes <count> changes in a SyncedState without an outbox and prints the idempotency key of
//     each change its sink received, one a line (a new launch: versions start again at 1).
//   statekit-sinks-helper sync-offline-edit <directory> <key> <url> <outbox> <authorization>
//     a persisted container in <directory> synced to <url> (HTTPSyncSink behind a DurableOutbox at
//     <outbox>, every request with the Authorization field <authorization> unless it is "-"):
//     syncs {"color":"teal"}, goes offline (every request fails before it is sent), writes
//     {"color":"orange"}, prints "edited <version>" once it is saved, and waits to be killed (see
//     LocalFirstSyncTests).
//   statekit-sinks-helper sync-kill-at <directory> <key> <url> <step> <authorization>
//     as sync-offline-edit without an outbox, but stops at <step> of the sync of orange, prints
//     "at <step>" and waits to be killed. Steps: base-saved (teal synced), mark-saved (the record
//     marking orange unsent is saved, and the child kills itself before orange is), change-saved (orange
//     saved offline, nothing sent), request-sent (the PUT of orange reached the server, its answer
//     is never heard), answer-received (the answer came and the ETag is being read back, before
//     the sync record is saved: only with a server that sends no ETag with a PUT, Apache),
//     agreement-saved (orange synced, and its agreement saved after the value), newer-write-saved
//     (as request-sent, and green written and saved meanwhile).
//   statekit-sinks-helper sync-count <outbox> <key> <url> <client-wins|server-wins> <authorization> [<directory>]
//     an Int container synced to <url> through a DurableOutbox at <outbox>, persisted in file
//     storage at <directory> when given: waits for its load at start, prints "counting from
//     <value>", then adds 1 every millisecond until killed (see OutboxRelaunchTests).
//   statekit-sinks-helper sync-shared-count <directory> <key> <url> <count> <authorization> [server-wins]
//     an Int container persisted in <directory> shared across processes, synced to <url> with a
//     merge policy (or .serverWins) that prints "conflict …" to standard error: loads, prints "ready <value>", waits
//     for a file "go" in <directory>, adds 1 <count> times (a millisecond apart), and waits to be
//     killed (the key's sender must stay to send the others' changes; see RemoteSenderLockTests).
//   statekit-sinks-helper sync-shared-relay <directory> <key> <url> <count> <authorization> <name>
//     as sync-shared-count, but waits for a file "go-<name>", writes a file "counted-<name>" once
//     it counted, and once a file "stop-<name>" exists flushes, writes its value to a file
//     "final-<name>" and exits (see RemoteSenderLockTests).
//   statekit-sinks-helper measure-modify - - <writes>
//     prints the writer's modify latency with no sink and with a sink that takes 200 ms per batch
//     (a measurement, not a test; build with -c release).
//   statekit-sinks-helper memory-churn - <key> <totals> <bound> <healthy|pausing>
//     makes synced containers, each with one ClosureSink that takes every batch or fails and
//     pauses for 30 s (see MemoryChurn.Sink), writes each once and releases it, until
//     it made each of the comma-separated <totals>; then waits until at most <bound> bytes above
//     the baseline are in use and prints how many are (see MemoryChurn and SinkMemoryTests).

/// A sink that never returns, so nothing gets acknowledged before the kill.
struct StuckSink: StateSink {
    func send(_ changes: [StateChange<Int>]) async throws {
        try await Task.sleep(for: .seconds(3_600))
    }
}

/// A sink that sends nothing before `start`, then takes `lag` per batch.
struct LaggingSink<Base: StateSink>: StateSink {
    var base: Base
    var start: ContinuousClock.Instant
    var lag: Duration

    func send(_ changes: [StateChange<Base.Value>]) async throws {
        try await Task.sleep(until: start)
        try await Task.sleep(for: lag)
        try await base.send(changes)
    }
}

/// A sink appending `{"key": idempotency key, "version": v, "value": v}` lines to `events`.
func eventsSink(_ events: String) -> AnalyticsSink<Int, JSONLinesAnalyticsBackend> {
    AnalyticsSink(backend: JSONLinesAnalyticsBackend(fileURL: URL(fileURLWithPath: events))) { change in
        AnalyticsEvent(
            name: "value", properties: ["value": String(change.newValue), "version": String(change.version)])
    }
}

/// A refusal for good.
struct PickyRefusal: StateSinkError {
    var isRetryable: Bool { false }
    var retryAfter: Duration? { nil }
}

/// Whether the outbox reported a failed append since the last call.
final class WriteFailures: @unchecked Sendable {
    private let lock = NSLock()
    private var failed = false
    private var noted = 0

    /// How many failures were noted in all.
    var count: Int { lock.withLock { noted } }

    func note() {
        lock.withLock {
            failed = true
            noted += 1
        }
    }

    func take() -> Bool {
        lock.withLock {
            defer { failed = false }
            return failed
        }
    }
}

/// No file may grow beyond `bytes` from now on, as on a full disk (the write that crosses it is
/// cut short and fails, instead of the process being signalled); `nil` lifts the limit.
func limitFileSize(to bytes: Int?) {
    signal(SIGXFSZ, SIG_IGN)
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
    limit.rlim_cur = bytes.map { rlim_t($0) } ?? limit.rlim_max
    setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
}

/// The size of the outbox's log now.
func sizeOfLog() -> Int {
    (try? FileManager.default.attributesOfItem(atPath: log.path)[.size] as? Int) ?? 0
}

/// Installs a diagnostics handler that adds 100 to `state` at each report of `kind`, and returns
/// the count of those reports.
func writeAtEachReport(of kind: StateDiagnostic.Kind, to state: State<Int>) -> WriteFailures {
    let reports = WriteFailures()
    StateDiagnostics.handler = { diagnostic in
        guard diagnostic.kind == kind else { return }
        reports.note()
        state.modify { $0 += 100 }
    }
    return reports
}

/// The test process that started the helper: when it is gone (it crashed before killing the
/// helper), the helper exits instead of waiting forever.
let parent = getppid()

/// Waits to be killed, or for the parent to be gone.
func waitToBeKilled() -> Never {
    while getppid() == parent { usleep(100_000) }
    exit(0)
}

/// The idempotency keys a sink received.
final class KeyCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var keys: [String] = []

    func append(_ more: [String]) { lock.withLock { keys += more } }

    var all: [String] { lock.withLock { keys } }
}

let arguments = CommandLine.arguments
guard arguments.count >= 5 else {
    FileHandle.standardError.write(
        Data("usage: statekit-sinks-helper <mode> <log|directory> <key> <count|events|url> ... (see main.swift)\n".utf8)
    )
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
    waitToBeKilled()
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
case "outbox-full-disk":
    let failures = WriteFailures()
    StateDiagnostics.handler = { diagnostic in
        if diagnostic.kind == .outboxWriteFailed { failures.note() }
        StateDiagnostics.standardError(diagnostic)
    }
    let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: StuckSink()) }
    limitFileSize(to: Int(arguments[4]) ?? 4_096)
    var failedVersion: UInt64 = 0
    while failedVersion == 0 {
        state.modify { $0 += 1 }
        if failures.take() { failedVersion = state.version }
    }
    limitFileSize(to: nil)
    for _ in 1...10 { state.modify { $0 += 1 } }
    FileHandle.standardOutput.write(Data("failed \(failedVersion) \(state.version)\n".utf8))
    waitToBeKilled()
case "outbox-full-disk-freed", "outbox-full-disk-at-start":
    // Every append fails (no file may grow) while changes are written and delivered, from the
    // start (even the log's rewrite at open fails) or from once the log is open; then the limit
    // is lifted and nothing more is written.
    let isFullAtStart = arguments[1] == "outbox-full-disk-at-start"
    if isFullAtStart { limitFileSize(to: 0) }
    let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: ClosureSink<Int> { _ in }) }
    await state.flush()
    if !isFullAtStart { limitFileSize(to: sizeOfLog()) }
    for _ in 1...(isFullAtStart ? 10 : 1_000) { state.modify { $0 += 1 } }
    await state.flush()
    limitFileSize(to: nil)
    FileHandle.standardOutput.write(Data("freed \(state.version)\n".utf8))
    waitToBeKilled()
case "handler-writes" where arguments.count == 5:
    // A persisted container whose storage breaks (its directory becomes a file), written five
    // times, with a diagnostics handler that writes to it at each report.
    let directory = log
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let state = PersistedState(
        0, key: key, storage: .file(directory, sharedAcrossProcesses: arguments[4] == "shared"))
    state.modify { $0 += 1 }
    state.flush()
    // A file takes the directory's place in one step: removed first, the directory would be
    // missing for a moment, and a watcher's check then would take the value for deleted outside.
    let aside = directory.path + ".aside"
    try? Data("not a directory".utf8).write(to: URL(fileURLWithPath: aside))
    guard FileReplacement.exchange(aside, directory.path) else {
        FileHandle.standardOutput.write(Data("cannot exchange the directory with a file: errno \(errno)\n".utf8))
        exit(1)
    }
    defer { try? FileManager.default.removeItem(atPath: aside) }
    let reports = writeAtEachReport(of: .storageFailed, to: state)
    // Each flush retries the failing save for about a second: one for the five writes.
    for _ in 1...5 { state.modify { $0 += 1 } }
    state.flush()
    FileHandle.standardOutput.write(Data("reports \(reports.count) value \(state.value)\n".utf8))
case "handler-writes-outbox":
    // A container behind an outbox whose log cannot grow (RLIMIT_FSIZE at its size), written five
    // times, with a diagnostics handler that writes to it at each failed append reported.
    let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: ClosureSink<Int> { _ in }) }
    await state.flush()
    limitFileSize(to: sizeOfLog())
    let reports = writeAtEachReport(of: .outboxWriteFailed, to: state)
    for _ in 1...5 { state.modify { $0 += 1 } }
    await state.flush()
    // The reports run on another thread, after the writes' locks: give them a moment.
    try? await Task.sleep(for: .milliseconds(500))
    FileHandle.standardOutput.write(Data("reports \(reports.count) value \(state.value)\n".utf8))
case "outbox-receipts":
    let count = UInt64(arguments[4]) ?? 2
    let half = count / 2
    let picky = ClosureSink<Int>(policy: SinkPolicy(maximumBatchSize: 1)) { changes in
        if changes[0].version > half { try await Task.sleep(for: .seconds(3_600)) }
        if changes[0].version % 7 == 0 { throw PickyRefusal() }
    }
    let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: picky).named("picky") }
    for _ in 1...count { state.write { $0 += 1 } }
    let outcome = await state.receipt(for: half)?.outcome(timeout: .seconds(60))
    FileHandle.standardOutput.write(Data("settled \(outcome == nil ? 0 : half) wrote \(state.version)\n".utf8))
    waitToBeKilled()
case "outbox-saved-full-disk":
    let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: ClosureSink<Int> { _ in }) }
    await state.flush()
    limitFileSize(to: sizeOfLog())
    let receipt = state.write { $0 += 1 }
    let whileFull = await receipt.saved(timeout: .seconds(1))
    limitFileSize(to: nil)
    let afterwards = await receipt.saved(timeout: .seconds(10))
    print("saved \(whileFull) \(afterwards)")
case "outbox-lagging":
    let sink = LaggingSink(
        base: eventsSink(arguments[4]), start: .now + .milliseconds(200), lag: .milliseconds(1))
    let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: sink) }
    FileHandle.standardOutput.write(Data("started \(state.version)\n".utf8))
    // The value is the version it makes, so a delivered change shows which write it came from.
    for _ in 1...12_000 { state.modify(Int(state.version) + 1) }
    while getppid() == parent {
        state.modify(Int(state.version) + 1)
        usleep(10_000)
    }
case "outbox-drain":
    let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: eventsSink(arguments[4])) }
    await state.flush()
    print("logged \(state.version)")
case "idempotency-keys":
    let keys = KeyCollector()
    let state = SyncedState(0, key: key) { ClosureSink { keys.append($0.map(\.idempotencyKey)) } }
    for value in 1...max(1, Int(arguments[4]) ?? 1) { state.modify(value) }
    await state.flush()
    print(keys.all.joined(separator: "\n"))
case "sync-offline-edit" where arguments.count == 7:
    let network = SyncNetwork(authorization: arguments[6])
    let state = syncedPaint(
        directory: arguments[2], key: key, url: arguments[4], network: network, outbox: arguments[5])
    await editOffline(state, network: network)
case "sync-kill-at" where arguments.count == 7:
    guard let step = SyncStep(rawValue: arguments[5]) else {
        FileHandle.standardError.write(Data("unknown step \(arguments[5])\n".utf8))
        exit(64)
    }
    let network = SyncNetwork(authorization: arguments[6])
    let storage = DyingStorage(directory: arguments[2])
    let state = syncedPaint(
        directory: arguments[2], key: key, url: arguments[4], network: network, outbox: nil, storage: storage)
    await stop(at: step, state, key: key, directory: arguments[2], network: network, storage: storage)
case "sync-count" where arguments.count == 7 || arguments.count == 8:
    let authorization = arguments[6] == "-" ? nil : arguments[6]
    let sink = HTTPSyncSink<Int>(
        endpoint: URL(string: arguments[4])!, timeout: .seconds(10),
        conflictPolicy: arguments[5] == "client-wins" ? .clientWins : .serverWins
    ) { request in
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
    }
    let outbox = DurableOutbox(fileURL: log, wrapping: sink)
    let state =
        arguments.count == 8
        ? SyncedState(0, key: key, storage: .file(URL(fileURLWithPath: arguments[7])), sinks: [outbox])
        : SyncedState(0, key: key, sinks: [outbox])
    try? await state.refresh()
    FileHandle.standardOutput.write(Data("counting from \(state.value)\n".utf8))
    while getppid() == parent {
        state.modify { $0 += 1 }
        usleep(1_000)
    }
case "memory-churn":
    let totals = arguments[4].split(separator: ",").compactMap { Int($0) }
    MemoryChurn.run(
        key: key, totals: totals, bound: arguments.count > 5 ? Int(arguments[5]) ?? 0 : 0,
        sink: arguments.count > 6 ? MemoryChurn.Sink(rawValue: arguments[6]) ?? .healthy : .healthy)
case "sync-shared-count" where arguments.count == 7 || arguments.count == 8:
    let state = await countShared(
        directory: log, key: key, url: URL(string: arguments[4])!, count: Int(arguments[5]) ?? 0,
        authorization: arguments[6] == "-" ? nil : arguments[6],
        serverWins: arguments.count == 8 && arguments[7] == "server-wins")
    withExtendedLifetime(state) { waitToBeKilled() }
case "sync-shared-relay" where arguments.count == 8:
    await relayShared(
        directory: log, key: key, url: URL(string: arguments[4])!, count: Int(arguments[5]) ?? 0,
        authorization: arguments[6] == "-" ? nil : arguments[6], name: arguments[7])
case "measure-modify":
    await ModifyLatency.run(writes: Int(arguments[4]) ?? 100_000)
default:
    FileHandle.standardError.write(Data("unknown mode \(arguments[1])\n".utf8))
    exit(64)
}
