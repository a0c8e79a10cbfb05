import Foundation
import StateKit
import StateKitHTTP

/// `sync-shared-count`: adds 1 `count` times to an Int persisted in `directory`, shared across
/// processes, and synced to `url`; every conflict the server reports is printed to standard error
/// (and merged, or, with `serverWins`, resolved for the server's value).
/// Returns the container, which the caller keeps until it is killed: while it lives, this process
/// may be the key's sender, which sends the other processes' changes too. It counts once the file
/// `go` exists in `directory`.
func countShared(
    directory: URL, key: String, url: URL, count: Int, authorization: String?, go: String = "go",
    serverWins: Bool = false
) async -> SyncedState<Int> {
    let merge = SyncConflictPolicy<Int>.merge { base, local, remote in
        FileHandle.standardError.write(
            Data("conflict base \(base.map(String.init) ?? "-") local \(local) remote \(remote)\n".utf8))
        return max(local, remote)
    }
    let sink = HTTPSyncSink<Int>(
        endpoint: url, timeout: .seconds(10), conflictPolicy: serverWins ? .serverWins : merge
    ) { request in
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
    }
    let storage = FileStateStorage.file(directory, sharedAcrossProcesses: true)
    let state = SyncedState(0, key: key, storage: storage, sinks: [sink])
    _ = await state.flush(timeout: .seconds(20))
    FileHandle.standardOutput.write(Data("ready \(state.value)\n".utf8))
    let goPath = directory.appending(path: go).path
    while !FileManager.default.fileExists(atPath: goPath) { usleep(1_000) }
    for _ in 0..<count {
        state.modify { $0 += 1 }
        usleep(1_000)
    }
    _ = await state.flush(timeout: .seconds(20))
    return state
}

/// `sync-shared-relay`: ``countShared(directory:key:url:count:authorization:go:)`` once the file
/// `go-<name>` exists, then writes the file `counted-<name>`; once the file `stop-<name>` exists it
/// flushes, writes its value to the file `final-<name>` and exits (a clean exit, which hands the
/// key's sending on when this process was its sender).
func relayShared(directory: URL, key: String, url: URL, count: Int, authorization: String?, name: String) async
    -> Never
{
    let state = await countShared(
        directory: directory, key: key, url: url, count: count, authorization: authorization, go: "go-\(name)")
    _ = FileManager.default.createFile(atPath: directory.appending(path: "counted-\(name)").path, contents: nil)
    let stop = directory.appending(path: "stop-\(name)").path
    while !FileManager.default.fileExists(atPath: stop) {
        guard getppid() == parent else { exit(0) }
        usleep(10_000)
    }
    _ = await state.flush(timeout: .seconds(20))
    let final = Data("\(state.value)".utf8)
    _ = FileManager.default.createFile(atPath: directory.appending(path: "final-\(name)").path, contents: final)
    exit(0)
}
