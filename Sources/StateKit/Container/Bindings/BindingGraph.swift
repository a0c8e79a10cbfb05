import Synchronization

/// Which bindings lie on a loop of bindings (`a <~ b` with `b <~ a`, or a cycle `y <~ x`,
/// `z <~ y`, `x <~ z`), so that only those forward latest-value-wins (``BindingForwarder``) and
/// every other binding hands its target every value of its source, in order.
///
/// The containers are nodes, known by their ``BindingClock/id``; each live binding is an edge
/// from its source to its target, held by the binding as an ``Edge``. A binding lies on a loop
/// when its target reaches its source along edges: a value it forwards can come back to its
/// source, and only there can bindings storm. The graph changes only when a binding is made or
/// released, under the graph's own lock, which takes no other lock and releases no edge; a binding
/// reads its ``Edge/isInLoop`` with one atomic load per forwarded value.
///
/// - Complexity: Making a binding visits the containers its target reaches; making or releasing
///   one that closes or opens a loop, O(*e*²) in the *e* bindings among that loop's containers.
final class BindingGraph: Sendable {
    /// The graph of every live binding, process-wide.
    static let shared = BindingGraph()

    /// One live binding, from its source's container to its target's; removed from the graph when
    /// the binding releases it.
    final class Edge: Sendable {
        /// Whether the binding lies on a loop of bindings now.
        let isInLoop = Atomic<Bool>(false)
        fileprivate let graph: BindingGraph

        fileprivate init(graph: BindingGraph) {
            self.graph = graph
        }

        deinit {
            graph.remove(ObjectIdentifier(self))
        }
    }

    private struct WeakEdge {
        weak var edge: Edge?
    }

    private struct Link {
        let source: UInt64
        let target: UInt64
        /// The edge's ``Edge/isInLoop``, as the graph decided it.
        var isInLoop: Bool
        let edge: WeakEdge
    }

    private struct Links {
        var links: [ObjectIdentifier: Link] = [:]
        var outgoing: [UInt64: Set<ObjectIdentifier>] = [:]
        var incoming: [UInt64: Set<ObjectIdentifier>] = [:]

        /// The containers reached from `start` (itself included), following edges forward or
        /// backward, and staying within `region` when one is given.
        func reached(from start: UInt64, forward: Bool, within region: Set<UInt64>? = nil) -> Set<UInt64> {
            var reached: Set<UInt64> = [start]
            var frontier = [start]
            while let node = frontier.popLast() {
                for id in (forward ? outgoing[node] : incoming[node]) ?? [] {
                    guard let link = links[id] else { continue }
                    let next = forward ? link.target : link.source
                    guard region?.contains(next) ?? true, reached.insert(next).inserted else { continue }
                    frontier.append(next)
                }
            }
            return reached
        }

        /// The containers on a loop through `node` with it: a strongly connected component.
        func loop(through node: UInt64) -> Set<UInt64> {
            reached(from: node, forward: true).intersection(reached(from: node, forward: false))
        }

        /// The edges with both ends in `region`.
        func links(within region: Set<UInt64>) -> [ObjectIdentifier] {
            region.flatMap { outgoing[$0] ?? [] }.filter { links[$0].map { region.contains($0.target) } ?? false }
        }

        /// Sets the edge `id`'s flag, and returns its edge to release once the lock is let go.
        mutating func set(_ id: ObjectIdentifier, isInLoop: Bool) -> Edge? {
            links[id]?.isInLoop = isInLoop
            let edge = links[id]?.edge.edge
            edge?.isInLoop.store(isInLoop, ordering: .relaxed)
            return edge
        }
    }

    private let links = LockedBox(Links())

    private init() {}

    /// Adds a binding from the container whose clock's id is `source` to the one whose is
    /// `target`; the binding keeps the returned edge as long as it lives.
    func add(from source: UInt64, to target: UInt64) -> Edge {
        let edge = Edge(graph: self)
        let id = ObjectIdentifier(edge)
        // Edges whose flags change are released after the lock: the last release of one removes
        // it from the graph, under this lock.
        let touched = links.withLock { links -> [Edge] in
            links.links[id] = Link(source: source, target: target, isInLoop: false, edge: WeakEdge(edge: edge))
            links.outgoing[source, default: []].insert(id)
            links.incoming[target, default: []].insert(id)
            guard links.reached(from: target, forward: true).contains(source) else { return [] }
            return links.links(within: links.loop(through: source)).compactMap { links.set($0, isInLoop: true) }
        }
        withExtendedLifetime(touched) {}
        return edge
    }

    /// Removes the edge `id`; the bindings of the loop it closed, if any, are looked at again.
    private func remove(_ id: ObjectIdentifier) {
        let touched = links.withLock { links -> [Edge] in
            guard let link = links.links[id] else { return [] }
            let loop = link.isInLoop ? links.loop(through: link.source) : []
            links.links[id] = nil
            links.outgoing[link.source]?.remove(id)
            if links.outgoing[link.source]?.isEmpty == true { links.outgoing[link.source] = nil }
            links.incoming[link.target]?.remove(id)
            if links.incoming[link.target]?.isEmpty == true { links.incoming[link.target] = nil }
            return links.links(within: loop).compactMap { other in
                guard let otherLink = links.links[other] else { return nil }
                let isInLoop = links.reached(from: otherLink.target, forward: true, within: loop)
                    .contains(otherLink.source)
                return links.set(other, isInLoop: isInLoop)
            }
        }
        withExtendedLifetime(touched) {}
    }
}
