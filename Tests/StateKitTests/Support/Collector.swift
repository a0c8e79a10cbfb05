import Foundation

/// A thread-safe list that handlers append to and tests read.
final class Collector<Element>: @unchecked Sendable {
    private let lock = NSLock()
    private var elements: [Element] = []

    func append(_ element: Element) {
        lock.withLock { elements.append(element) }
    }

    var all: [Element] {
        lock.withLock { elements }
    }

    var count: Int {
        lock.withLock { elements.count }
    }
}
