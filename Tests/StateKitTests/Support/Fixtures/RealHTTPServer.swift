import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real HTTP server nobody here wrote, run by a test on 127.0.0.1 on a free port, in a temporary
/// directory of its own, as its own process group (stopped with kill -9 of the group, then waited for).
///
/// `.ci/run` installs the three (Debian `apache2`; PyPI `wsgidav`, `cheroot`, `moto[server]`).
/// Where one is missing, ``start(_:)`` returns `nil` after printing a loud notice, so the test
/// skips it, except under CI (`CI` set), where a missing server fails the test.
final class RealHTTPServer: @unchecked Sendable {
    enum Kind: String, CaseIterable, Sendable, CustomStringConvertible {
        /// Apache httpd with mod_dav and mod_dav_fs, `FileETag Digest`.
        case apache
        /// wsgidav (WebDAV on cheroot), anonymous access to a temporary folder.
        case wsgidav
        /// moto's S3 server; one bucket, requests with an unchecked SigV4 `Authorization`.
        case moto

        var description: String { rawValue }

        var executable: String {
            switch self {
            case .apache: "apache2"
            case .wsgidav: "wsgidav"
            case .moto: "moto_server"
            }
        }
    }

    struct Unavailable: Error, CustomStringConvertible {
        var description: String
    }

    let kind: Kind
    let port: UInt16
    let directory: URL
    private let process: Process

    /// The header fields every request to this server needs (moto: an `Authorization` it accepts
    /// without checking the signature; unsigned requests get 403 once an object exists).
    var headers: [String: String] {
        switch kind {
        case .moto:
            [
                "Authorization":
                    "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00"
            ]
        case .apache, .wsgidav: [:]
        }
    }

    /// A fresh resource URL on the server.
    func resource(_ name: String = "r-\(UUID().uuidString).json") -> URL {
        switch kind {
        case .moto: URL(string: "http://127.0.0.1:\(port)/statekit/\(name)")!
        case .apache, .wsgidav: URL(string: "http://127.0.0.1:\(port)/\(name)")!
        }
    }

    /// Starts `kind`; `nil` (after a loud notice) when it is not installed outside CI.
    static func start(_ kind: Kind) async throws -> RealHTTPServer? {
        guard let executable = which(kind.executable) else {
            let message =
                "\n*** SKIPPED: \(kind.executable) is not installed, so the \(kind) conformance tests did not run. "
                + ".ci/run installs it (apt-get install apache2; pip install wsgidav cheroot \"moto[server]\"). ***\n"
            if ProcessInfo.processInfo.environment["CI"] != nil { throw Unavailable(description: message) }
            FileHandle.standardError.write(Data(message.utf8))
            return nil
        }
        let directory = FileManager.default.temporaryDirectory.appending(path: "statekit-\(kind)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: directory.appending(path: "root"), withIntermediateDirectories: true)
        var lastError: any Error = Unavailable(description: "\(kind) did not start")
        for _ in 0..<3 {  // a port picked free can be taken before the server binds it
            let port = try freePort()
            let arguments: [String]
            switch kind {
            case .apache:
                let configuration = directory.appending(path: "httpd.conf")
                try apacheConfiguration(port: port, directory: directory).write(
                    to: configuration, atomically: true, encoding: .utf8)
                arguments = ["-f", configuration.path, "-DFOREGROUND"]
            case .wsgidav:
                arguments = [
                    "--host", "127.0.0.1", "--port", "\(port)", "--root", directory.appending(path: "root").path,
                    "--auth", "anonymous", "--no-config", "-q",
                ]
            case .moto:
                arguments = ["-H", "127.0.0.1", "-p", "\(port)"]
            }
            let process = Process()
            // Foundation starts the child as a session and process group leader, so the server and
            // its workers are killed as one group. (Wrapping it in setsid(1) made setsid fork and
            // exit: the server outlived the test, and the test hung on the zombie.)
            process.executableURL = URL(filePath: executable)
            process.arguments = arguments
            process.currentDirectoryURL = directory
            let log = FileHandle(forWritingAtPath: "/dev/null")
            process.standardOutput = log
            process.standardError = log
            try process.run()
            let server = RealHTTPServer(kind: kind, port: port, directory: directory, process: process)
            do {
                try await server.waitUntilReady()
                return server
            } catch {
                lastError = error
                server.stop(removingDirectory: false)
            }
        }
        try? FileManager.default.removeItem(at: directory)
        throw lastError
    }

    private init(kind: Kind, port: UInt16, directory: URL, process: Process) {
        self.kind = kind
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// Kills the server's process group and waits (at most 10 s) for it.
    func stop() {
        stop(removingDirectory: true)
    }

    private func stop(removingDirectory: Bool) {
        let pid = process.processIdentifier
        if pid > 0 {
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        if removingDirectory { try? FileManager.default.removeItem(at: directory) }
    }

    /// A plain request to the server, with its ``headers``, outside any sink.
    func request(
        _ method: String, _ url: URL, body: Data? = nil, headers extra: [String: String] = [:]
    ) async throws -> (status: Int, body: Data, etag: String?) {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 10)
        request.httpMethod = method
        request.httpBody = body
        for (field, value) in headers.merging(extra, uniquingKeysWith: { $1 }) {
            request.setValue(value, forHTTPHeaderField: field)
        }
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        return (http?.statusCode ?? 0, data, http?.value(forHTTPHeaderField: "ETag"))
    }

    private func waitUntilReady() async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            guard process.isRunning else { throw Unavailable(description: "\(kind) exited at start") }
            if let (status, _, _) = try? await request("GET", URL(string: "http://127.0.0.1:\(port)/")!), status > 0 {
                if kind == .moto {
                    let created = try await request("PUT", URL(string: "http://127.0.0.1:\(port)/statekit")!)
                    guard created.status == 200 else {
                        throw Unavailable(description: "moto did not create the bucket: HTTP \(created.status)")
                    }
                }
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Unavailable(description: "\(kind) did not answer on port \(port) within 20 s")
    }

    private static func apacheConfiguration(port: UInt16, directory: URL) -> String {
        """
        ServerRoot "/usr/lib/apache2"
        ServerName 127.0.0.1
        Listen 127.0.0.1:\(port)
        PidFile "\(directory.path)/httpd.pid"
        ErrorLog "\(directory.path)/error.log"
        LoadModule mpm_event_module modules/mod_mpm_event.so
        LoadModule authz_core_module modules/mod_authz_core.so
        LoadModule dav_module modules/mod_dav.so
        LoadModule dav_fs_module modules/mod_dav_fs.so
        LoadModule alias_module modules/mod_alias.so
        LoadModule rewrite_module modules/mod_rewrite.so
        LoadModule headers_module modules/mod_headers.so
        DAVLockDB "\(directory.path)/davlock"
        # Content digests: the default (size and mtime) is a weak ETag for a second after each
        # write, and If-Match never matches a weak ETag.
        FileETag Digest
        DocumentRoot "\(directory.path)/root"
        <Directory "\(directory.path)/root">
          Dav On
          Require all granted
        </Directory>
        # Hostile rows of the matrix: redirects of a write, and 503 + Retry-After while
        # root/busy.flag exists.
        Redirect 307 "/moved-307/" "/"
        Redirect 308 "/moved-308/" "/"
        Redirect 301 "/moved-301/" "/"
        Redirect 302 "/moved-302/" "/"
        RewriteEngine On
        RewriteCond "\(directory.path)/root/busy.flag" -f
        RewriteRule "^/busy/" - [R=503,L]
        Header always set Retry-After "1" "expr=%{REQUEST_STATUS} == 503"
        """
    }

    private static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/local/bin"]
        for directory in directories {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    private static func freePort() throws -> UInt16 {
        let (socket, port) = try LoopbackSocket.bind(reusingAddress: false)
        close(socket)
        return port
    }
}

extension RealHTTPServer {
    /// Runs `body` with a fresh server of `kind` and a fresh directory, both removed afterwards,
    /// or skips (loudly) when the server is not installed.
    static func with(_ kind: Kind, _ body: (RealHTTPServer, URL) async throws -> Void) async throws {
        guard let server = try await start(kind) else { return }
        let directory = TemporaryDirectory()
        defer {
            server.stop()
            directory.cleanUp()
        }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        try await body(server, directory.url)
    }

    /// What the server holds at `url`, decoded as `Value`; `nil` when it holds nothing. A request
    /// that fails is tried again, up to 5 times (a server busy beside the whole suite).
    func value<Value: Decodable>(_ type: Value.Type, at url: URL) async throws -> Value? {
        for attempt in 1... {
            do {
                let (status, body, _) = try await request("GET", url)
                return status == 200 ? try JSONDecoder().decode(Value.self, from: body) : nil
            } catch  where attempt < 5 {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        return nil
    }
}
