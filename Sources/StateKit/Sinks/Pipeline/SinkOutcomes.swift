/// What became of the changes one sink settled without delivering them: the exceptions to
/// "delivered", by version, for ``WriteReceipt``s.
///
/// A sink's pipeline settles changes in version order, mostly: everything below its first
/// unsettled version is delivered unless listed here. Runs of versions with one fate are kept as
/// one range, so a sink that refuses everything keeps one entry, and a flaky one an entry per
/// run of failures.
struct SinkOutcomes {
    /// What became of a range of versions.
    enum Fate: Equatable {
        /// Given up by a policy, or replaced by the destination's value.
        case discarded(reason: String)
        /// Refused by the sink for good.
        case rejected(reason: String)
        /// Replaced in a full buffer by a newer change, which carries its value: it shares the
        /// outcome of the first version after its range.
        case coalesced
    }

    struct Entry: Equatable {
        var versions: ClosedRange<UInt64>
        var fate: Fate
    }

    /// Sorted by version, the ranges disjoint.
    private(set) var entries: [Entry] = []

    /// `batch` was delivered: what was coalesced into it was delivered with it, and need not be
    /// remembered (so a sink that coalesces keeps no entry a batch).
    mutating func delivered(_ batch: ClosedRange<UInt64>) {
        while let last = entries.last, last.fate == .coalesced, batch.contains(last.versions.upperBound &+ 1) {
            entries.removeLast()
        }
    }

    /// Records that `versions` met `fate`; a range next to one of the same fate extends it.
    mutating func note(_ versions: ClosedRange<UInt64>, _ fate: Fate) {
        if let last = entries.last, last.versions.upperBound < versions.lowerBound {
            if last.versions.upperBound &+ 1 == versions.lowerBound, Self.joins(last.fate, fate) {
                entries[entries.count - 1].versions = last.versions.lowerBound...versions.upperBound
            } else {
                entries.append(Entry(versions: versions, fate: fate))
            }
            return
        }
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].versions.lowerBound < versions.lowerBound { low = middle + 1 } else { high = middle }
        }
        if low > 0, entries[low - 1].versions.upperBound &+ 1 == versions.lowerBound,
            Self.joins(entries[low - 1].fate, fate)
        {
            entries[low - 1].versions = entries[low - 1].versions.lowerBound...versions.upperBound
            return
        }
        entries.insert(Entry(versions: versions, fate: fate), at: low)
    }

    /// Forgets all but the newest `count` entries.
    mutating func keepNewest(_ count: Int) {
        if entries.count > count { entries.removeFirst(entries.count - count) }
    }

    /// The range recorded for `version`, with its fate, or `nil` (delivered, once settled).
    func entry(of version: UInt64) -> Entry? {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            let versions = entries[middle].versions
            if versions.upperBound < version {
                low = middle + 1
            } else if versions.lowerBound > version {
                high = middle
            } else {
                return entries[middle]
            }
        }
        return nil
    }

    /// Ranges join when they are of one kind (the first reason stays: one run of failures, one
    /// entry; coalesced changes next to each other share the outcome of the version after them).
    private static func joins(_ earlier: Fate, _ later: Fate) -> Bool {
        switch (earlier, later) {
        case (.discarded, .discarded), (.rejected, .rejected), (.coalesced, .coalesced): true
        default: false
        }
    }
}
