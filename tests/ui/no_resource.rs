use reflector::Reflect;

#[derive(Reflect, Clone)]
pub struct Widget {
    #[reflect(index)]
    owner: String,
}

fn main() {}
