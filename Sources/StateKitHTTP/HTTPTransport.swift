import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends one request with a hard deadline and the sink's redirect rules.
///
/// The deadline is enforced here, not only through `URLRequest.timeoutInterval` (which
/// FoundationNetworking treats as an idle timeout): after `timeout` the task is cancelled and the
/// request fails with `URLError(.timedOut)`. URLSession's own timeouts are set a second or more
/// beyond it, in whole seconds: FoundationNetworking truncates them to whole seconds, so 300 ms
/// there would time out at once. The deadlines run on a queue of their own, so a
/// timeout fires on time even while the app's global queues are busy.
///
/// Redirects: a read (`GET`, `HEAD`) follows them as usual. A write follows only a 307 or 308 to
/// the same origin (at most five hops), re-sent here with its method, header fields and body
/// (URLSession on Linux follows them with an empty body); any other redirect of a write is not
/// followed, so the 3xx answer reaches the sink, which treats it as a failure, never as sent.
final class HTTPTransport: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    private static let deadlines = DispatchQueue(label: "StateKitHTTP.HTTPTransport.deadlines")
    private let lock = NSLock()
    private var session: URLSession?
    let timeout: TimeInterval
    /// URLSession's timeouts: later than ``timeout``, so that the deadline here decides.
    private let sessionTimeout: TimeInterval

    init(configuration: URLSessionConfiguration, timeout: TimeInterval) {
        self.timeout = timeout
        sessionTimeout = timeout.rounded(.up) + 1
        super.init()
        let configuration = configuration.copy() as? URLSessionConfiguration ?? configuration
        configuration.timeoutIntervalForRequest = sessionTimeout
        configuration.timeoutIntervalForResource = sessionTimeout
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
        lock.withLock { self.session = session }
    }

    /// Cancels what is in flight and lets the session go (it holds its delegate, this transport).
    func invalidate() {
        let session = lock.withLock {
            let session = self.session
            self.session = nil
            return session
        }
        session?.invalidateAndCancel()
    }

    /// Sends `request`; returns the body and the final response.
    func data(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        var request = request
        for _ in 0..<5 {
            let (data, response) = try await send(request)
            guard let next = Self.redirect(of: request, response: response) else { return (data, response) }
            request = next
        }
        return try await send(request)
    }

    /// A write's 307 or 308 to the same origin, as the same request to the new location; `nil`
    /// for anything else.
    static func redirect(of request: URLRequest, response: HTTPURLResponse) -> URLRequest? {
        guard [307, 308].contains(response.statusCode), let source = request.url,
            let location = response.value(forHTTPHeaderField: "Location"),
            let target = URL(string: location, relativeTo: source)?.absoluteURL,
            target.scheme == source.scheme, target.host == source.host, target.port == source.port
        else { return nil }
        var next = request
        next.url = target
        return next
    }

    private func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        var request = request
        request.timeoutInterval = sessionTimeout
        guard let session = lock.withLock({ session }) else { throw URLError(.cancelled) }
        let outcome = Outcome()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        outcome.finish(.failure(error))
                    } else if let response = response as? HTTPURLResponse {
                        outcome.finish(.success((data ?? Data(), response)))
                    } else {
                        outcome.finish(.failure(URLError(.badServerResponse)))
                    }
                }
                outcome.arm(continuation, task: task)
                task.resume()
                let deadline = DispatchTime.now() + timeout
                Self.deadlines.asyncAfter(deadline: deadline) {
                    outcome.finish(.failure(URLError(.timedOut)))
                }
            }
        } onCancel: {
            outcome.finish(.failure(CancellationError()))
        }
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let method = task.originalRequest?.httpMethod?.uppercased() ?? "GET"
        completionHandler(method == "GET" || method == "HEAD" ? request : nil)
    }

    /// Resumes the continuation once: with the answer, the timeout, or the cancellation.
    private final class Outcome: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>?
        private var task: URLSessionTask?
        private var early: Result<(Data, HTTPURLResponse), any Error>?

        func arm(_ continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>, task: URLSessionTask) {
            lock.lock()
            if let early {
                lock.unlock()
                task.cancel()
                continuation.resume(with: early)
                return
            }
            self.continuation = continuation
            self.task = task
            lock.unlock()
        }

        func finish(_ result: Result<(Data, HTTPURLResponse), any Error>) {
            lock.lock()
            guard let continuation else {
                if early == nil && task == nil { early = result }
                lock.unlock()
                return
            }
            self.continuation = nil
            let task = self.task
            self.task = nil
            lock.unlock()
            if case .failure = result { task?.cancel() }
            continuation.resume(with: result)
        }
    }
}
