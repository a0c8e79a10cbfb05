import Foundation
import StateKit
import StateKitHTTP

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Two devices syncing one cart through a real WebDAV server (wsgidav), which the tour starts on
/// 127.0.0.1 and kills at the end. Without wsgidav installed the section says so and shows nothing.
let remoteSection = TourSection(name: "remote", summary: "HTTPSyncSink: ETags, refresh and a merged conflict") {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin"
    guard
        let executable = path.split(separator: ":").map({ "\($0)/wsgidav" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
    else {
        print("  wsgidav is not installed (pip install wsgidav cheroot), so this section does not run.")
        return
    }
    let directory = FileManager.default.temporaryDirectory.appending(path: "statekit-remote-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let port = Int.random(in: 20_000..<60_000)
    let server = Process()
    server.executableURL = URL(filePath: executable)
    server.arguments = [
        "--host", "127.0.0.1", "--port", "\(port)", "--root", directory.path, "--auth", "anonymous", "--no-config",
        "-q",
    ]
    server.standardOutput = FileHandle.nullDevice
    server.standardError = FileHandle.nullDevice
    try server.run()
    defer {
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()
    }
    let url = URL(string: "http://127.0.0.1:\(port)/cart.json")!
    let deadline = ContinuousClock.now + .seconds(10)
    while (try? await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/")!)) == nil {
        guard ContinuousClock.now < deadline, server.isRunning else {
            print("  wsgidav did not start on port \(port), so this section does not run.")
            return
        }
        try await Task.sleep(for: .milliseconds(100))
    }
    print("  wsgidav serves \(url)")

    let union = SyncConflictPolicy<[String]>.merge { _, local, remote in remote + local.filter { !remote.contains($0) }
    }
    let laptop = SyncedState([String](), key: "cart") { HTTPSyncSink(endpoint: url, conflictPolicy: union) }
    let phone = SyncedState([String](), key: "cart") { HTTPSyncSink(endpoint: url, conflictPolicy: union) }
    laptop.modify { $0.append("Book") }
    await laptop.flush()
    try await phone.refresh()
    print("  laptop wrote (If-None-Match: *), phone refreshed: \(phone.value)")
    laptop.modify { $0.append("Pen") }
    await laptop.flush()
    phone.modify { $0.append("Lamp") }  // written on the ETag the laptop replaced: 412
    await phone.flush()
    await phone.flush()
    try await laptop.refresh()
    print("  phone's stale write was refused and merged: phone \(phone.value), laptop \(laptop.value)")
    print("  phone: \(phone.statistics[0])")
}
