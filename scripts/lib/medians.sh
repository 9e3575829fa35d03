# Sourced by the benchmark scripts. `medians`: reads lines `KEY... VALUE` (any order, any number
# of key fields, the value last) and prints one line `KEY... MEDIAN` per key (the middle value,
# or the mean of the two middle ones), keys in no particular order.
medians() {
  awk '{ v = $NF; $NF = ""; print v, $0 }' | sort -k1,1g |
    awk '{ v = $1; $1 = ""; k = substr($0, 2); sub(/ $/, "", k); x[k, ++c[k]] = v }
      END { for (k in c) { m = c[k]; print k, (m % 2 ? x[k, (m + 1) / 2] : (x[k, m / 2] + x[k, m / 2 + 1]) / 2) } }'
}
