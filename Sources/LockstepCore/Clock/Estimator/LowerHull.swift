/// Andrew's monotone chain: the lower convex hull of points sorted by `x`, in one pass.
///
/// The estimator's envelopes rest on it: the lower hull of one direction's `(local, value)`
/// points is the set of lines under all of them (Moon, Skelly & Towsley, 1999).
enum LowerHull {
    /// Replaces the contents of `hull` with the indices of the lower hull's vertices of the
    /// points `(points[i].local, value(points[i]))`, left to right, leaving out the point at
    /// `excluding` (pass −1 to keep all). `points` must be sorted by `local`; of points at the
    /// same time only the lowest can be a vertex, and collinear points are not vertices.
    /// `hull` keeps its capacity: nothing is allocated once it has reserved `points.count`.
    static func build(
        of points: ContiguousArray<SampleWindow.Entry>,
        value: (SampleWindow.Entry) -> Double,
        excluding: Int = -1,
        into hull: inout ContiguousArray<Int>
    ) {
        hull.removeAll(keepingCapacity: true)
        guard let reference = points.last?.local else { return }
        for i in points.indices where i != excluding {
            let p = points[i]
            let px = Double(p.local &- reference), py = value(p)
            if let last = hull.last, points[last].local == p.local {
                // Same time: keep the lower.
                if value(points[last]) <= py { continue }
                hull.removeLast()
            }
            while hull.count >= 2 {
                let o = points[hull[hull.count - 2]], q = points[hull[hull.count - 1]]
                let ox = Double(o.local &- reference), qx = Double(q.local &- reference)
                let cross = (qx - ox) * (py - value(o)) - (value(q) - value(o)) * (px - ox)
                if cross > 0 { break }
                hull.removeLast()
            }
            hull.append(i)
        }
    }
}
