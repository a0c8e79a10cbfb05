import Foundation
import StateKit
import Synchronization

// The commands for file storage shared across processes (issue 44). Each opens the key in
// `FileStateStorage.file(directory, sharedAcrossProcesses: true)`, or `false` when the command
// ends in `-unshared` (the same run against today's storage):
//
//   shared-increment <directory> <key> <count>  prints "ready", waits for a line on standard input,
//                                               adds 1 <count> times (modify, then ~> by turns),
//                                               prints "done <value>"
//   shared-append <directory> <key> <count> <tag>  as shared-increment, appending "<tag>-<i>" to
//                                               the entries of a `SharedLog` struct
//   shared-hold <directory> <key>               prints "ready", waits for a line, then adds 1 in a
//                                               modify body that prints "inside <value before>"
//                                               and never returns (a test kills it there)
//   shared-watch <directory> <key>              prints "value <v>" for the Int's current value and
//                                               each change, until standard input ends
//   shared-transaction <directory> <key>        adds 1 inside withStateTransaction
//   shared-subscribe-changes <directory> <key>  prints "ready", then "change <old> <new> <origin>"
//                                               for each change of the Int and "diagnostic <kind>
//                                               <message>" for each diagnostic; reading standard
//                                               input, "count" prints "count <changes so far>",
//                                               until it ends
//   shared-write-subscribe <directory> <key> <count>  as shared-subscribe-changes, and after
//                                               "ready" waits for a line, adds 1 <count> times
//                                               taking the key at once however far behind it is
//                                               (`SharedKeyHooks.catchUpsBeforeTakingIn` = 0),
//                                               and prints "done"
//
// Transactions over two shared keys (semantics 30), on Ints:
//
//   shared-transfer <directory> <keyA> <keyB> <count>  prints "ready", waits for a line, then
//                                               moves 1 to 5 between the keys <count> times, each
//                                               in withStateTransaction, prints "done"
//   shared-sample <directory> <keyA> <keyB> <count>  prints "ready", waits for a line, then reads
//                                               both keys in withStateTransaction <count> times,
//                                               prints "sums <each distinct sum, comma-separated>"
//   shared-transaction-hold <directory> <keyA> <keyB>  prints "ready", waits for a line, moves 5
//                                               from keyA to keyB in withStateTransaction, whose
//                                               body prints "inside" and never returns
//   shared-transaction-stop <directory> <keyA> <keyB>  as shared-transaction-hold, but the body
//                                               returns and the commit stops once it replaced its
//                                               first file, printing "replaced"

/// A structured value several processes append to.
struct SharedLog: Codable, Sendable {
    var title = "log"
    var entries: [String] = []
}

/// Runs a `shared-…` command; `false` if `arguments` is not one.
func runSharedCommand(_ arguments: [String]) -> Bool {
    guard arguments[0].hasPrefix("shared-"), arguments.count >= 3 else { return false }
    let isShared = !arguments[0].hasSuffix("-unshared")
    let command = isShared ? arguments[0] : String(arguments[0].dropLast("-unshared".count))
    let storage = FileStateStorage.file(
        URL(fileURLWithPath: arguments[1], isDirectory: true), sharedAcrossProcesses: isShared)
    let key = arguments[2]
    switch command {
    case "shared-increment" where arguments.count == 4:
        let count = PersistedState(0, key: key, storage: storage)
        line("ready")
        _ = readLine()
        for index in 0..<(Int(arguments[3]) ?? 0) {
            if index.isMultiple(of: 2) {
                count.modify { $0 += 1 }
            } else {
                count ~> { $0 += 1 }
            }
        }
        count.flush()
        line("done \(count.value)")
    case "shared-append" where arguments.count == 5:
        let log = PersistedState(SharedLog(), key: key, storage: storage)
        line("ready")
        _ = readLine()
        for index in 0..<(Int(arguments[3]) ?? 0) {
            log.modify { $0.entries.append("\(arguments[4])-\(index)") }
        }
        log.flush()
        line("done \(log.value.entries.count)")
    case "shared-hold":
        let count = PersistedState(0, key: key, storage: storage)
        line("ready")
        _ = readLine()
        count.modify { value in
            line("inside \(value)")
            value += 1
            while true { sleep(60) }
        }
    case "shared-watch":
        let count = PersistedState(0, key: key, storage: storage)
        let subscription = count.subscribe { line("value \($0)") }
        while readLine() != nil {}
        subscription.cancel()
    case "shared-subscribe-changes", "shared-write-subscribe":
        let isWriting = command == "shared-write-subscribe"
        if isWriting { SharedKeyHooks.catchUpsBeforeTakingIn = 0 }
        let count = PersistedState(0, key: key, storage: storage)
        let received = Mutex(0)
        StateDiagnostics.handler = { line("diagnostic \($0.kind) \($0.message)") }
        let subscription = count.subscribeChanges { change in
            received.withLock { $0 += 1 }
            line("change \(change.oldValue) \(change.newValue) \(change.origin)")
        }
        line("ready")
        if isWriting, arguments.count == 4 {
            _ = readLine()
            for _ in 0..<(Int(arguments[3]) ?? 0) { count.modify { $0 += 1 } }
            line("done")
        }
        while let command = readLine() {
            if command == "count" { line("count \(received.withLock { $0 })") }
        }
        subscription.cancel()
    case "shared-transaction":
        let count = PersistedState(0, key: key, storage: storage)
        line("ready")
        withStateTransaction { count.modify { $0 += 1 } }
        count.flush()
        line("done \(count.value)")
    default:
        return runSharedTransactionCommand(command, arguments, storage: storage)
    }
    return true
}

/// Runs a `shared-…` command over two keys; `false` if `arguments` is not one.
private func runSharedTransactionCommand(_ command: String, _ arguments: [String], storage: FileStateStorage) -> Bool {
    guard arguments.count >= 4 else { return false }
    let a = PersistedState(0, key: arguments[2], storage: storage)
    let b = PersistedState(0, key: arguments[3], storage: storage)
    switch command {
    case "shared-transfer" where arguments.count == 5:
        line("ready")
        _ = readLine()
        for index in 0..<(Int(arguments[4]) ?? 0) {
            let amount = index % 5 + 1
            let (from, to) = index.isMultiple(of: 2) ? (a, b) : (b, a)
            withStateTransaction {
                from.modify { $0 -= amount }
                to.modify { $0 += amount }
            }
        }
        line("done")
    case "shared-sample" where arguments.count == 5:
        line("ready")
        _ = readLine()
        var sums: Set<Int> = []
        for _ in 0..<(Int(arguments[4]) ?? 0) {
            sums.insert(withStateTransaction { a.value + b.value })
        }
        line("sums " + sums.sorted().map(String.init).joined(separator: ","))
    case "shared-transaction-hold", "shared-transaction-stop":
        if command == "shared-transaction-stop" {
            SharedKeyHooks.afterFirstReplace = {
                line("replaced")
                while true { sleep(60) }
            }
        }
        line("ready")
        _ = readLine()
        withStateTransaction {
            a.modify { $0 -= 5 }
            b.modify { $0 += 5 }
            guard command == "shared-transaction-hold" else { return }
            line("inside")
            while true { sleep(60) }
        }
    default:
        return false
    }
    return true
}
