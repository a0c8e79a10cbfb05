/// What a tool that shows a ``StateHistory`` reads of it: the keys it tracks and the keys each of
/// its steps changed; and how it goes back several steps at once.
extension StateHistory {
    /// The keys of the tracked containers, in the order they were given.
    package var trackedKeys: [String] {
        containers.map(\.key)
    }

    /// The keys each step changed, oldest step first: the steps ``undo()`` would undo (the last
    /// is undone first) and those ``redo()`` would re-apply (the last is redone first).
    package var stepKeys: (undo: [[String]], redo: [[String]]) {
        record.withLock { record in
            let keys = { (step: HistoryStep) in step.changes.map { self.containers[$0.index].key } }
            return (record.undoSteps.map(keys), record.redoSteps.map(keys))
        }
    }

    /// Undoes steps until `count` steps are left to undo, each as ``undo()`` does, and returns how
    /// many it undid; it stops early when one cannot be undone.
    package func undo(toStepCount count: Int) -> Int {
        var undone = 0
        while record.withLock({ $0.undoSteps.count }) > count {
            guard undo() else { break }
            undone += 1
        }
        return undone
    }
}
